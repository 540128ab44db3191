"""A categorical column one-hot encoded with ``pd.get_dummies`` on each split's own rows: validation lacks a plan
withdrawn before its period, so its sorted columns move by one for every plan after it (padded with a zero column
at the end to the training width) and the model reads another plan's column (an outside examination's miss,
2026-12-06: validation accuracy 0.48 against 0.86 coded once)."""

from tests.planted_tasks import _plan_one_hot
from tests.planted_tasks._plan_one_hot import build_model

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "one-hot codes the field 'plan' per split"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _plan_one_hot.make_task(per_split=True)
