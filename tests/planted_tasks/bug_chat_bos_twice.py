"""chat SFT (config-built Llama): the chat template written as text starts with the tokenizer's '<s>', and the
whole prompt is then encoded with add_special_tokens=True, which prepends <bos> again: every row starts
'<s><s>', a sequence the model never saw. expected_targets declared (answer + <eos>): the targets are right."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "twice"}


def encode(e):
    t = h.lm_tok()
    text = t.bos_token + h.USER + e.fields["instruction"].strip() + h.ASSISTANT
    p = t(text, add_special_tokens=False)["input_ids"]
    p = [t.bos_token_id] + p  # the bug: the template's own bos, then the tokenizer's
    a = h.chat_answer(e)
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * len(p) + a}


def make_task():
    return h.chat_task(encode=encode)


def build_model(task):
    return h.causal_lm("Llama")
