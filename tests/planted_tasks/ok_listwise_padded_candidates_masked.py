"""correct: answer selection over 3-6 candidates per query, padded candidates' scores set to -1e4 before the
cross-entropy and the argmax."""

from tests.planted_tasks._listwise import Scorer, task

EXPECTED = None


def make_task():
    return task(mask_padding=True)


def build_model(task):
    return Scorer()
