"""correct: classification with soft targets (a label distribution per example, as annotator agreement
gives): float probability rows, cross-entropy with probabilities, summed; one target per example."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = None


def collate(items):
    batch = stack_collate(items)
    batch["labels"] = F.one_hot(batch["labels"], 3).float() * 0.9 + 0.1 / 3
    return batch


def make_task():
    return classification_task(
        collate=collate,
        target_count=lambda b: torch.tensor(b["labels"].shape[0]),
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        correct_count=lambda logits, b: (logits.argmax(-1) == b["labels"].argmax(-1)).sum(),
    )


def build_model(task):
    return mlp(task)
