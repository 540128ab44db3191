"""a hand-rolled 'lazy' layer: the input projection is created on the first forward (its width read from the
data), i.e. after the optimizer was built from model.parameters(): it is never updated (and, unseeded, differs
from run to run)."""

import torch
from torch import nn

from tests.planted_tasks._common import CLASS_NAMES, EVERY_CHECK, classification_task

EXPECTED = {"step": "contract", "verdict": "fail", "said": "forward created"}
SETTINGS = EVERY_CHECK


def make_task():
    return classification_task()


class Model(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.hidden = hidden
        self.proj = None
        self.head = nn.Linear(hidden, len(CLASS_NAMES))

    def forward(self, inputs):
        if self.proj is None:  # the bug: a parameter born after the optimizer
            self.proj = nn.Linear(inputs.shape[-1], self.hidden)
        return self.head(torch.relu(self.proj(inputs)))


def build_model(task):
    return Model()
