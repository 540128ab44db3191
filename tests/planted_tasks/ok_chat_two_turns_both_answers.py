"""correct: two-turn chat SFT, every user turn masked, both assistant answers and their <eos> trained."""

from tests.planted_tasks._multiturn import model, task

EXPECTED = None


def make_task():
    return task(True)


def build_model(task):
    return model(task)
