"""chat SFT (config-built Llama): labels = input_ids with the prompt masked, then 'special tokens are not text'
-> every id in tokenizer.all_special_ids set to -100 in the labels: this also masks the answer's closing <eos>,
which is in the inputs but never a target, so the model never learns to stop. expected_targets declared (answer +
<eos>)."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn"}


def encode(e):
    p, a = h.chat_prompt(e), h.chat_answer(e)
    ids = p + a
    labels = [IGNORE_INDEX] * len(p) + a
    specials = set(h.lm_tok().all_special_ids)
    labels = [IGNORE_INDEX if x in specials else x for x in labels]  # the bug: eos is special too
    return {"index": e.index, "input_ids": ids, "labels": labels}


def make_task():
    return h.chat_task(encode=encode)


def build_model(task):
    return h.causal_lm("Llama")
