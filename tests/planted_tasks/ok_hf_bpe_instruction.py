"""correct: HF instruction tuning with a locally trained byte-level BPE: prompt and answer tokenised SEPARATELY and
concatenated (<bos> prompt answer <eos>), the prompt's labels -100, right padding, a transformers Llama
(control for bug_hf_prompt_len_boundary_merge)."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_bpe as h

EXPECTED = None


def encode(example):
    t = h.tokenizer()
    prompt = [t.bos_token_id] + h.ids(h.PROMPT.format(instruction=example.fields["instruction"]))
    answer = h.expected(example)
    return {
        "index": example.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
    }


def make_task():
    return h.make(encode)


build_model = h.build_model
