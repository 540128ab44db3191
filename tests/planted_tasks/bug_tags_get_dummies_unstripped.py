"""multi-label: tags exported as "sports, politics" and split with str.get_dummies(sep=","): every tag
that is not first keeps its leading space, so "politics" and " politics" are two columns, each article
positive in one of them only; the head has twice the outputs and learns every topic twice, from part of
its examples each."""

from tests.planted_tasks._tag_dummies import build_model, dummies_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "declared twice but for whitespace"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return dummies_task(",")
