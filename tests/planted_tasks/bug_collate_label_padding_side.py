"""collate left-pads input_ids and the mask but right-pads labels: labels no longer line up with tokens."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    labels = torch.full((len(items), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.bool)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        input_ids[row, width - n :] = item["input_ids"]
        mask[row, width - n :] = True
        labels[row, :n] = item["labels"]  # the bug: the other side
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([item["index"] for item in items]),
    }


def make_task():
    return generation_task(collate=collate, padding_side="left")


def build_model(task):
    return tiny_gpt(task)
