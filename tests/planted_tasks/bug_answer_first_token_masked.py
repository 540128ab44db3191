"""chat SFT (config-built Qwen2), no expected_targets declared: the prompt mask is one token too long
(labels[:len(prompt) + 1] = -100, the prompt length counted with a bos the answer does not have), so every answer
trains from its second token and the model never learns how an answer begins."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "answer's first token is masked"}


def encode(e):
    p, a = h.chat_prompt(e), h.chat_answer(e)
    masked = len(p) + 1  # the bug: one past the prompt
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * masked + (p + a)[masked:]}


def make_task():
    return h.chat_task(encode=encode, expected_targets=None)


def build_model(task):
    return h.causal_lm("Qwen2")
