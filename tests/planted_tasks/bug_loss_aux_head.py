"""deep supervision recipe: the model returns {'logits': final head, 'aux_logits': intermediate head}; loss_sum
was meant to be CE(main) + 0.4 * CE(aux) but keeps only the aux term (out['aux_logits']), while predict reads
out['logits']: the final head is never trained."""

import torch.nn.functional as F
from torch import nn

from tests.planted_tasks._common import CLASS_NAMES, EVERY_CHECK, FEATURES, classification_task

EXPECTED = {
    "step": "tiny_subset",
    "verdict": "fail",
    "said": "loss_sum trains the output's 'aux_logits', and predict reads 'logits'",
}
SETTINGS = EVERY_CHECK


def make_task():
    return classification_task(
        loss_sum=lambda out, b: F.cross_entropy(out["aux_logits"].float(), b["labels"], reduction="sum"),
        predict=lambda out, b: out["logits"].argmax(dim=-1),
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.aux = nn.Linear(32, len(CLASS_NAMES))
        self.block2 = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, len(CLASS_NAMES))

    def forward(self, inputs):
        h1 = self.block1(inputs)
        return {"logits": self.head(self.block2(h1)), "aux_logits": self.aux(h1)}


def build_model(task):
    return Model()
