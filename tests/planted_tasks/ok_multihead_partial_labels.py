"""correct: two-head classifier on two merged datasets (half annotated for animal, half for size), the missing
head's label -100 (ignored by cross_entropy), target_count counts the labels present in both heads."""

from tests.planted_tasks._multihead import TwoHeads, task

EXPECTED = None


def make_task():
    return task()


def build_model(task):
    return TwoHeads()
