"""correct: multi-hot tag rows built from the set of a record's tags (a tag listed twice is still 1), smoothed
to 0.05 / 0.95 and trained with F.binary_cross_entropy_with_logits: soft targets in [0, 1]."""

import torch.nn.functional as F

from tests.planted_tasks._repeated_tags import Model, tag_set, task

EXPECTED = None
__all__ = ["Model", "make_task"]
SMOOTHING = 0.1


def make_task():
    return task(
        lambda ids: tag_set(ids) * (1 - SMOOTHING) + SMOOTHING / 2,
        lambda out, b: F.binary_cross_entropy_with_logits(out.float(), b["labels"], reduction="sum"),
    )
