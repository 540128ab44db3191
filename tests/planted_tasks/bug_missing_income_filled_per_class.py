"""Missing incomes filled with the mean income of the applicant's own class, computed over every row
(``fillna(df.groupby('default').income.transform('mean'))``): each class's missing rows carry one exact value of
their own, so the label sits in the input (an outside examination's miss, 2026-12-06: validation accuracy 0.72
against 0.59 filled with the training mean)."""

from tests.planted_tasks import _loan_income
from tests.planted_tasks._loan_income import build_model

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "one exact value per class"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _loan_income.make_task(by_class=True)
