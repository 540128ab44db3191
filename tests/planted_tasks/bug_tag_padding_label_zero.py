"""tagger: collate pads the labels with 0 (the first tag, like an 'O' tag) instead of -100: padding is
trained as 'consonant'."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    width = max(len(i["input_ids"]) for i in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    labels = torch.zeros((len(items), width), dtype=torch.long)  # the bug
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, it in enumerate(items):
        n = len(it["input_ids"])
        input_ids[r, :n], labels[r, :n], mask[r, :n] = it["input_ids"], it["labels"], 1
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return tagging_task(collate=collate)


def build_model(task):
    return Tagger()
