"""a Gaussian-noise augmentation layer inside the model that ignores eval mode."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "eval_determinism", "verdict": "fail"}


class GaussianNoise(nn.Module):
    def __init__(self, std: float = 0.1):
        super().__init__()
        self.std = std

    def forward(self, x):
        return x + self.std * torch.randn_like(x)  # the bug: no `if self.training`


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(GaussianNoise(), nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, len(CLASS_NAMES)))

    def forward(self, inputs):
        return self.net(inputs)


def make_task():
    return classification_task()
