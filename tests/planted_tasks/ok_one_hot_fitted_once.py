"""correct: the plan one-hot encoded with the training split's columns for every split (validation, without a
withdrawn plan, has that column at 0)."""

from tests.planted_tasks import _plan_one_hot
from tests.planted_tasks._plan_one_hot import build_model

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _plan_one_hot.make_task(per_split=False)
