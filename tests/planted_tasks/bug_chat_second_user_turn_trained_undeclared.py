"""two-turn chat SFT, no expected_targets declared (a task written without the optional hook): the prompt mask
covers only the first user turn, so the second user turn ('U: ... A: ') is trained as assistant text."""

from tests.planted_tasks._common import generation_task
from tests.planted_tasks._multiturn import encode_with, examples, model

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "a later turn's prompt is trained"}


def make_task():
    return generation_task(examples(), encode=encode_with(False), expected_targets=None)


def build_model(task):
    return model(task)
