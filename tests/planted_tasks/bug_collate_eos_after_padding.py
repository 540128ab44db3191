"""instruction tuning: encode leaves <eos> off and collate appends it as one extra column AFTER padding
(torch.cat([padded_ids, eos_column])): short rows end 'answer <pad> <pad> <eos>', their <eos> label is
predicted from padding, and the answer's last token is never trained towards <eos>."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import SEPARATOR, generation_task, pad_collate, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(example):
    prompt = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + SEPARATOR)
    answer = tok.encode(example.fields["answer"])
    return {
        "index": example.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
    }


def collate(items):
    batch = pad_collate(items)
    n = len(items)
    eos = torch.full((n, 1), tok.EOS_ID)
    batch["input_ids"] = torch.cat([batch["input_ids"], eos], dim=1)
    batch["labels"] = torch.cat([batch["labels"], eos], dim=1)
    batch["attention_mask"] = torch.cat([batch["attention_mask"], torch.ones(n, 1, dtype=torch.bool)], dim=1)
    return batch


def make_task():
    return generation_task(encode=encode, collate=collate)


def build_model(task):
    return tiny_gpt(task)
