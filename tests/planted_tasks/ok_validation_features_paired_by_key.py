"""correct: churn of three kinds from five numbers, validation's features and labels paired as read."""

from tests.planted_tasks import _churn_rows
from tests.planted_tasks._exam107 import mlp

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _churn_rows.make_task(sorted_validation=False)


def build_model(task):
    return mlp(5, 3)
