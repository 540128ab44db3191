"""HF instruction tuning with a byte-level BPE (trained locally): input_ids = tokenizer(prompt + answer), and the
prompt is masked by len(tokenizer(prompt)). The prompt ends with a space ('### Answer: '); tokenised together,
that space merges into the answer's first token ('Ġo'), so the mask hides the answer's first token (and the
trained tokens are not the answer's own tokens)."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_bpe as h

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "at its start"}


def encode(example):
    t = h.tokenizer()
    prompt = h.PROMPT.format(instruction=example.fields["instruction"])
    full = [t.bos_token_id] + h.ids(prompt + example.fields["answer"]) + [t.eos_token_id]
    n_prompt = 1 + len(h.ids(prompt))
    labels = [IGNORE_INDEX] * n_prompt + full[n_prompt:]
    return {"index": example.index, "input_ids": torch.tensor(full), "labels": torch.tensor(labels)}


def make_task():
    return h.make(encode)


build_model = h.build_model
