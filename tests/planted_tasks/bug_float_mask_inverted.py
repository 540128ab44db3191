"""sequence classifier: an additive float key mask built as attention_mask * -1e9 (0/1 swapped: should be
(1 - attention_mask) * -1e9): real tokens are masked, padding attended; no NaN appears."""

from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class Model(MeanPoolClassifier):
    def forward(self, input_ids, attention_mask):
        import torch

        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        key_mask = attention_mask.float() * -1e9  # the bug
        hidden = self.encoder(x, src_key_padding_mask=key_mask)
        return self.head(self.pool(hidden, attention_mask))


def make_task():
    return seqcls_task()


def build_model(task):
    return Model()
