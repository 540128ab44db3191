"""correct: causal LM whose collate shifts the labels (labels[t] = token t+1), declared; loss does not shift."""

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, pad_collate, tiny_gpt

EXPECTED = None


def collate(items):
    batch = pad_collate(items)
    labels = torch.full_like(batch["labels"], IGNORE_INDEX)
    labels[:, :-1] = batch["labels"][:, 1:]  # what output t is trained towards: token t+1
    batch["labels"] = labels
    return batch


def loss_sum(logits, batch):
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        batch["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def make_task():
    return generation_task(
        collate=collate,
        loss_sum=loss_sum,
        labels_shifted=True,
        target_count=lambda batch: (batch["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, batch: logits.argmax(dim=-1),
    )


def build_model(task):
    return tiny_gpt(task)
