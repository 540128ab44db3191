"""two-tower retrieval: F.triplet_margin_loss(anchor, negative, positive): the positive and the negative
swapped, so the loss pulls the unclicked product towards the query. The loss falls to 0; predict (the
nearer candidate, labelled the positive) is wrong on every example."""

import torch.nn.functional as F

from tests.planted_tasks._triplets import build_model, triplet_task

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "arguments are swapped"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"]}
__all__ = ["EXPECTED", "SETTINGS", "build_model", "make_task"]


def make_task():
    return triplet_task(lambda out, b: F.triplet_margin_loss(out[:, 0], out[:, 2], out[:, 1], reduction="sum"))
