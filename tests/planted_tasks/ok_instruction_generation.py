"""correct: instruction generation, only the answer trained, right padding, shift in loss_sum."""

from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None


def make_task():
    return generation_task()


def build_model(task):
    return tiny_gpt(task)
