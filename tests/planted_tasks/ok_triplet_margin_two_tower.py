"""correct: F.triplet_margin_loss(anchor, positive, negative) on a two-tower model's [B, 3, D] output,
one label per row (candidate 0): no class scores per position, which the output-reading probes must
leave unjudged, not crash on."""

import torch.nn.functional as F

from tests.planted_tasks._triplets import build_model, triplet_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return triplet_task(lambda out, b: F.triplet_margin_loss(out[:, 0], out[:, 1], out[:, 2], reduction="sum"))
