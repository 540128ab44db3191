"""correct: the drifting sensors of bug_val_scaled_with_own_statistics, every split standardised with the
statistics fitted on training (`fit` on train, `transform` on the others): the drift stays visible."""

from tests.planted_tasks.bug_val_scaled_with_own_statistics import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(own=False)
