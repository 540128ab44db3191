"""correct: the severity regression of bug_regression_ordinal_alphabetical with the categories coded in
their own order (low=0, medium=1, high=2)."""

from tests.planted_tasks.bug_regression_ordinal_alphabetical import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(alphabetical=False)
