"""the model returns a learned bias broadcast to the batch (forward never reads inputs, e.g. the wrong
variable returned after a refactor): it can only learn the class prior."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "the same for all"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "eval_determinism", "tiny_subset"]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(FEATURES, 32)
        self.out = nn.Linear(32, len(CLASS_NAMES))

    def forward(self, inputs):
        h = torch.relu(self.hidden(inputs))
        logits = self.out(h)  # noqa: F841 - the planted mistake leaves it unused
        return self.out.bias.expand(inputs.shape[0], -1)  # the bug: meant `return logits`


def make_task():
    return classification_task()
