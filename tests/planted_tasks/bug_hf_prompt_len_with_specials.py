"""HF instruction tuning: the whole text is tokenised once with add_special_tokens=True (<bos> ... <eos>),
and the prompt's length is measured with another call of the same tokenizer, which ALSO appends <eos>
to the prompt alone: the mask covers one token too many, the answer's first token is never trained."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_bpe as h
from tests.planted_tasks._bpe_special import PROMPT, special_tokenizer

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(example):
    t = special_tokenizer()
    prompt = PROMPT.format(instruction=example.fields["instruction"])
    ids = t(prompt + example.fields["answer"])["input_ids"]  # <bos> prompt answer <eos>
    n_prompt = len(t(prompt)["input_ids"])  # the bug: <bos> prompt <eos> -> one too many
    labels = [IGNORE_INDEX] * n_prompt + ids[n_prompt:]
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


def make_task():
    return h.make(encode)


build_model = h.build_model
