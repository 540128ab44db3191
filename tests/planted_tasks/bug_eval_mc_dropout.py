"""the model calls F.dropout(training=True) (copied from an MC-dropout recipe): evaluation is random."""

import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "eval_determinism", "verdict": "fail"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(FEATURES, 32)
        self.out = nn.Linear(32, len(CLASS_NAMES))

    def forward(self, inputs):
        return self.out(F.dropout(F.relu(self.hidden(inputs)), p=0.2, training=True))  # the bug


def make_task():
    return classification_task()
