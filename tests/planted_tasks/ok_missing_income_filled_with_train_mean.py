"""correct: missing incomes filled with the training split's mean income, one value whatever the class."""

from tests.planted_tasks import _loan_income
from tests.planted_tasks._loan_income import build_model

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _loan_income.make_task(by_class=False)
