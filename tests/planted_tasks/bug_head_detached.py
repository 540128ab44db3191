"""gradient blocked: the logits are .detach()ed (copied from a 'frozen features' recipe) and a
trainable per-class bias added: only the bias learns."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "get no gradient from the loss (net.0.weight"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "eval_determinism", "tiny_subset"]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, len(CLASS_NAMES)))
        self.bias = nn.Parameter(torch.zeros(len(CLASS_NAMES)))

    def forward(self, inputs):
        return self.net(inputs).detach() + self.bias  # the bug


def make_task():
    return classification_task()
