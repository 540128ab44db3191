"""correct: instruction generation with left padding (inputs, labels and mask padded alike)."""

from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None


def make_task():
    return generation_task(padding_side="left")


def build_model(task):
    return tiny_gpt(task)
