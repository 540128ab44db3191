"""correct: the mixup of bug_mixup_hard_labels with the targets mixed by the same weight (soft labels,
cross-entropy against the mixed distribution)."""

from tests.planted_tasks.bug_mixup_hard_labels import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(soft=True)
