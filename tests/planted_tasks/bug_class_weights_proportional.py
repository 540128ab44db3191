"""Imbalanced classes (cat 60%, dog 30%, bird 10%): 'balanced' class weights written as
counts / counts.sum() instead of total / (classes * counts): the majority class is up-weighted 6x
over the rare one, the opposite of what was meant."""

from collections import Counter

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp
from tests.planted_tasks.bug_class_weight_order import examples

EXPECTED = {"step": "objective", "verdict": "warn"}


def make_task():
    rows = examples()
    counts = Counter(e.fields["animal"] for e in rows)
    weight = torch.tensor([counts[c] / sum(counts.values()) for c in CLASS_NAMES], dtype=torch.float32)  # BUG
    return classification_task(
        examples=rows,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], weight=weight, reduction="sum"),
    )


def build_model(task):
    return mlp(task)
