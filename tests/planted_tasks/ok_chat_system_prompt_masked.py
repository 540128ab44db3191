"""correct: chat SFT (config-built Llama) with a long system prompt before the user turn; system + user +
assistant header all masked (-100), only the answer + <eos> trained; the system prompt is the SAME text in every
row (not a leak, not a duplicate)."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = None
SYSTEM = "<|system|>\nYou are a terse assistant. Answer with the transformed word only.\n"


def prompt(e):
    return [h.lm_tok().bos_token_id] + h.ids(SYSTEM + h.USER + e.fields["instruction"].strip() + h.ASSISTANT)


def encode(e):
    p, a = prompt(e), h.chat_answer(e)
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * len(p) + a}


def make_task():
    return h.chat_task(encode=encode)


def build_model(task):
    return h.causal_lm("Llama")
