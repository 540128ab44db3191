"""correct: HF instruction tuning with a tokenizer that adds <bos> ... <eos>: the prompt's length is
measured with add_special_tokens=False plus the one leading <bos> (control for
x4_bug_hf_prompt_len_with_specials)."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_bpe as h
from tests.planted_tasks._bpe_special import PROMPT, special_tokenizer

EXPECTED = None


def encode(example):
    t = special_tokenizer()
    prompt = PROMPT.format(instruction=example.fields["instruction"])
    ids = t(prompt + example.fields["answer"])["input_ids"]
    n_prompt = 1 + len(t(prompt, add_special_tokens=False)["input_ids"])
    labels = [IGNORE_INDEX] * n_prompt + ids[n_prompt:]
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


def make_task():
    return h.make(encode)


build_model = h.build_model
