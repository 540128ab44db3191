"""correct: a cosine-similarity classifier (normalised features vs normalised class prototypes) with a
LEARNED temperature, CLIP-style: logit_scale = exp(s), s initialised at log(1/0.07) (scale 14.3)."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.planted_tasks._common import CLASS_NAMES, EVERY_CHECK, FEATURES, classification_task

EXPECTED = None
SETTINGS = EVERY_CHECK


def make_task():
    return classification_task()


class Model(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.prototypes = nn.Parameter(torch.randn(len(CLASS_NAMES), hidden))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, inputs):
        z = F.normalize(self.body(inputs), dim=-1)
        p = F.normalize(self.prototypes, dim=-1)
        return self.logit_scale.exp().clamp(max=100) * z @ p.T


def build_model(task):
    return Model()
