"""correct: the pooled adult heights of bug_regression_units_mixed with hospital B's metres converted
to centimetres before the examples are built: one unit for every target."""

from tests.planted_tasks.bug_regression_units_mixed import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(converted=True)
