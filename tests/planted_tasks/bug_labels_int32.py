"""collate builds labels with dtype=torch.int32 (numpy default on some platforms): F.cross_entropy refuses
them. Expected: a clear message naming collate/labels dtype, not a bare traceback."""

import torch

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = {"step": "contract", "verdict": "fail"}


def collate(items):
    b = stack_collate(items)
    b["labels"] = b["labels"].to(torch.int32)  # the bug
    return b


def make_task():
    return classification_task(collate=collate)


def build_model(task):
    return mlp(task)
