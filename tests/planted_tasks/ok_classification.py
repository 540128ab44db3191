"""correct: classification of named classes (raw_label + class_names, one mapping for every split)."""

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = None


def make_task():
    return classification_task()


def build_model(task):
    return mlp(task)
