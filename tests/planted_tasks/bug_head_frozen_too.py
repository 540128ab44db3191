"""fine-tuning: the constructor freezes 'the backbone' with a loop over self.parameters() written after
the head is created: the head is frozen too and no parameter gets a gradient."""

import torch.nn as nn

from tests.planted_tasks._common import FEATURES, classification_task

EXPECTED = {"step": "contract", "verdict": "fail", "said": "no trainable parameter"}


class FineTuned(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.head = nn.Linear(32, 3)
        for p in self.parameters():  # the bug: meant self.backbone.parameters()
            p.requires_grad = False

    def forward(self, inputs):
        return self.head(self.backbone(inputs))


def make_task():
    return classification_task()


def build_model(task):
    return FineTuned()
