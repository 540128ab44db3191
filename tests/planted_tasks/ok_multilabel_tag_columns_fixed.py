"""correct: multi-label tags, one fixed tag -> column mapping for every split."""

from tests.planted_tasks._multilabel import Model, fixed, task  # noqa: F401

EXPECTED = None


def make_task():
    return task(fixed)
