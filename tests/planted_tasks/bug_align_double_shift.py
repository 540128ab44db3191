"""collate shifts the labels (declared labels_shifted=True) and loss_sum shifts them again: trains t+2."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, pad_collate, shifted_loss_sum, tiny_gpt

EXPECTED = {"step": "alignment", "verdict": "fail"}


def collate(items):
    batch = pad_collate(items)
    labels = torch.full_like(batch["labels"], IGNORE_INDEX)
    labels[:, :-1] = batch["labels"][:, 1:]
    batch["labels"] = labels
    return batch


def make_task():
    return generation_task(
        collate=collate,
        labels_shifted=True,
        loss_sum=shifted_loss_sum,  # the bug: the copied loss shifts once more
        target_count=lambda batch: (batch["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, batch: logits.argmax(dim=-1),
    )


def build_model(task):
    return tiny_gpt(task)
