"""correct: the same export split with str.get_dummies(sep=", "): one column per tag."""

from tests.planted_tasks._tag_dummies import build_model, dummies_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return dummies_task(", ")
