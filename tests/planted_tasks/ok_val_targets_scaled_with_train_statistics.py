"""correct: bug_val_targets_scaled_with_own_statistics's regression, its targets standardised with the
statistics fitted on training's targets (`fit` on train, `transform` on validation)."""

from tests.planted_tasks.bug_val_targets_scaled_with_own_statistics import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(own=False)
