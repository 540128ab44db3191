"""chat SFT (config-built Llama): the answer is tokenised with add_special_tokens=False and </s> is never appended
(neither to input_ids nor to labels, nor to expected_targets, which reuse the same helper): no target is ever
</s>, so the fine-tuned model never learns to stop generating."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "no stop token ends the answers"}


def answer(e):
    return h.ids(e.fields["answer"])  # the bug: no eos


def encode(e):
    p, a = h.chat_prompt(e), answer(e)
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * len(p) + a}


def make_task():
    return h.chat_task(encode=encode, expected_targets=answer)


def build_model(task):
    return h.causal_lm("Llama")
