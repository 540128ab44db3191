"""chat SFT (config-built Llama): prompt and answer encoded by separate tokenizer calls, the answer's call with
add_special_tokens=True (a Llama tokenizer prepends <bos>): labels train '<bos>' as the first token of every
answer, so the model learns to emit <bos> after '<|assistant|>'. expected_targets declared (answer + <eos>)."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn"}


def encode(e):
    p = h.chat_prompt(e)
    a = [h.lm_tok().bos_token_id] + h.chat_answer(e)  # the bug: the answer's own <bos>
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * len(p) + a}


def make_task():
    return h.chat_task(encode=encode)


def build_model(task):
    return h.causal_lm("Llama")
