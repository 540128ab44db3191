"""correct: two-turn chat SFT without expected_targets declared
every user turn masked, both answers and
their <eos> trained."""

from tests.planted_tasks._common import generation_task
from tests.planted_tasks._multiturn import encode_with, examples, model

EXPECTED = None


def make_task():
    return generation_task(examples(), encode=encode_with(True), expected_targets=None)


def build_model(task):
    return model(task)
