"""correct: multi-label tags distilled from a teacher's sigmoid probabilities (soft targets in [0, 1], stored in
the batch) with F.binary_cross_entropy on the student's sigmoid."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._repeated_tags import TAGS, Model, tag_set, task

EXPECTED = None
__all__ = ["Model", "make_task"]

TEACHER = torch.Generator().manual_seed(3)
BIAS = torch.rand(len(TAGS), generator=TEACHER) * 0.3


def teacher_probabilities(ids):
    """What a teacher said: the set's 0/1 pulled towards its own leaning, strictly inside [0, 1]."""
    return tag_set(ids) * 0.8 + BIAS


def make_task():
    return task(
        teacher_probabilities,
        lambda out, b: F.binary_cross_entropy(torch.sigmoid(out.float()), b["labels"], reduction="sum"),
    )
