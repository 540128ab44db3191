"""collate builds labels by cloning the padded input_ids: padding positions are counted in the loss."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.bool)
    for row, item in enumerate(items):
        input_ids[row, : len(item["input_ids"])] = item["input_ids"]
        mask[row, : len(item["input_ids"])] = True
    labels = input_ids.clone()  # the bug: <pad> stays a label (should be -100)
    labels[:, 0] = IGNORE_INDEX
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([item["index"] for item in items]),
    }


def make_task():
    return lm_task(collate=collate)


def build_model(task):
    return tiny_gpt(task)
