"""correct: multi-task classification: two label keys (labels: animal, aux_labels: size) and a dict output
with two heads; loss_sum adds both cross-entropies per example, target_count counts examples."""

import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task, stack_collate

EXPECTED = None


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.head = nn.Linear(32, len(CLASS_NAMES))
        self.aux = nn.Linear(32, 2)

    def forward(self, inputs):
        h = self.body(inputs)
        return {"logits": self.head(h), "aux_logits": self.aux(h)}


def collate(items):
    b = stack_collate(items)
    b["aux_labels"] = (b["inputs"][:, 0] > 0).long()
    return b


def loss_sum(out, b):
    return F.cross_entropy(out["logits"].float(), b["labels"], reduction="sum") + F.cross_entropy(
        out["aux_logits"].float(), b["aux_labels"], reduction="sum"
    )


def make_task():
    return classification_task(collate=collate, loss_sum=loss_sum, predict=lambda out, b: out["logits"].argmax(-1))
