"""two-turn chat SFT: the prompt mask is `labels[:len(first_user_turn)] = -100` (written for one turn), so the
second user turn is trained as if the assistant said it."""

from tests.planted_tasks._multiturn import model, task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    return task(False)


def build_model(task):
    return model(task)
