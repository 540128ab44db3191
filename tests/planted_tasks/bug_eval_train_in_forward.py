"""an MLP with nn.Dropout(0.3) whose forward calls self.train() first (copied from a 'make sure we are training'
snippet): dropout stays on in evaluation, so validation is random."""

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task

EXPECTED = {"step": "eval_determinism", "verdict": "fail", "said": "modules in training mode after forward"}


class Model(MLP):
    def __init__(self):
        super().__init__(8, 3, dropout=0.3)

    def forward(self, x):
        self.train()  # BUG
        return self.net(x)


def make_task():
    return cls_task(blobs(), ("low", "mid", "high"))
