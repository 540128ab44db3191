"""correct: the house prices of bug_regression_target_clipped scaled into [0, 1] with their minimum and
maximum: one house at each end, every other price strictly between."""

from tests.planted_tasks.bug_regression_target_clipped import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(clipped=False)
