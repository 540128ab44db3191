"""sequence classifier: collate pads with the space byte (PAD = ord(' '), 'a harmless character') and
builds attention_mask as input_ids != PAD: every real space between words is masked out as padding."""

import torch

from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "is also a real token"}
PAD = ord(" ")  # the bug: collides with a real token (the space between words)


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), PAD, dtype=torch.long)
    for row, item in enumerate(items):
        input_ids[row, : len(item["input_ids"])] = item["input_ids"]
    return {
        "input_ids": input_ids,
        "attention_mask": (input_ids != PAD).long(),
        "labels": torch.tensor([item["label"] for item in items]),
        "index": torch.tensor([item["index"] for item in items]),
    }


def make_task():
    task = seqcls_task(collate=collate)
    task.info["pad_id"] = PAD
    return task


def build_model(task):
    return MeanPoolClassifier()
