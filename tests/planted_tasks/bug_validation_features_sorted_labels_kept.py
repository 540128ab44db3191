"""Validation's feature rows come back from a merge sorted on one column while its labels keep the old row order
(joined by position, not by key): every validation label sits on another customer's numbers, and validation scores
chance where training's held-out customers score well above it (an outside examination's miss, 2026-12-06:
validation accuracy 0.29 against 0.61 paired)."""

from tests.planted_tasks import _churn_rows
from tests.planted_tasks._exam107 import mlp

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "labels do not follow its inputs"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _churn_rows.make_task(sorted_validation=True)


def build_model(task):
    return mlp(5, 3)
