"""correct: static shapes (TPU/XLA style): collate pads every micro-batch to a multiple of 8 ROWS (and
the width to a multiple of 16); filler rows are all <pad>, attention_mask 0, labels -100, so the loss
ignores them; 'index' lists the real examples only. Instruction tuning, tiny GPT."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None


def collate(items):
    rows = -(-len(items) // 8) * 8
    width = -(-max(len(i["input_ids"]) for i in items) // 16) * 16
    ids = torch.full((rows, width), tok.PAD_ID)
    labels = torch.full((rows, width), IGNORE_INDEX)
    mask = torch.zeros((rows, width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        ids[r, :n], labels[r, :n], mask[r, :n] = i["input_ids"], i["labels"], 1
    return {
        "input_ids": ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return generation_task(collate=collate)


def build_model(task):
    return tiny_gpt(task)
