"""correct: a frozen backbone (no gradient) under a trainable head, as in fine-tuning."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = None


class FrozenBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        for parameter in self.backbone.parameters():
            parameter.requires_grad_(False)
        self.head = nn.Linear(32, len(CLASS_NAMES))

    def forward(self, inputs):
        with torch.no_grad():
            features = self.backbone(inputs)
        return self.head(features)


def make_task():
    return classification_task()


def build_model(task):
    return FrozenBackbone()
