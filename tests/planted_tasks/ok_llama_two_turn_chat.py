"""correct: two-turn chat SFT on a config-built Llama: user / assistant / user ('again') / assistant, BOTH assistant
answers (each + </s>) are trained, both user turns masked; expected_targets lists the two answers in order."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = None


def turn2_prompt():
    return h.ids(h.USER + "again" + h.ASSISTANT)


def encode(e):
    p1, a = h.chat_prompt(e), h.chat_answer(e)
    p2 = turn2_prompt()
    ids = p1 + a + p2 + a
    labels = [IGNORE_INDEX] * len(p1) + a + [IGNORE_INDEX] * len(p2) + a
    return {"index": e.index, "input_ids": ids, "labels": labels}


def make_task():
    return h.chat_task(encode=encode, expected_targets=lambda e: h.chat_answer(e) * 2)


def build_model(task):
    return h.causal_lm("Llama")
