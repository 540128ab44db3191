"""correct: classification whose model returns a dict with extra keys (logits, hidden, attention maps)."""

import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = None


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.head = nn.Linear(32, len(CLASS_NAMES))

    def forward(self, inputs):
        h = self.body(inputs)
        return {"hidden": h, "logits": self.head(h), "probs": self.head(h).softmax(-1)}


def make_task():
    return classification_task(
        loss_sum=lambda out, b: F.cross_entropy(out["logits"].float(), b["labels"], reduction="sum"),
        predict=lambda out, b: out["logits"].argmax(-1),
    )
