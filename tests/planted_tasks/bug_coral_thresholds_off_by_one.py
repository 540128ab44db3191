"""BUG: CORAL ordinal head (4 cumulative logits for 5 severities) whose threshold targets use >= instead of >:
threshold 0 is always 1 and classes 3 and 4 get the same target (the top class can never be predicted)."""

import torch
import torch.nn.functional as F

from tests.planted_tasks import ok_coral_ordinal as base
from tests.planted_tasks._small_tasks import MLP

EXPECTED = {"step": "contract", "verdict": "fail", "said": "a loss that clamps the labels"}


def loss(out, b):
    ks = torch.arange(4)
    return F.binary_cross_entropy_with_logits(out.float(), (b["labels"][:, None] >= ks).float(), reduction="sum")  # BUG


def make_task():
    t = base.make_task()
    t.loss_sum = loss
    return t


def build_model(task):
    return MLP(6, 4)
