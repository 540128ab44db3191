"""correct: binary classification whose model returns ONE score per example as a 1-D tensor [B] (the head's
output .squeeze(-1) inside forward, a very common style), BCE-with-logits summed, predict = score > 0."""

import torch
import torch.nn.functional as F
from torch import nn

from tests.planted_tasks import ok_binary_one_logit as base

EXPECTED = None


def make_task():
    t = base.make_task()
    t.loss_sum = lambda s, b: F.binary_cross_entropy_with_logits(s.float(), b["labels"].float(), reduction="sum")
    t.predict = lambda s, b: (s > 0).long()
    return t


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs).squeeze(-1)
