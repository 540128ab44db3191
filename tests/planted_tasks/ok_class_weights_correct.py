"""correct: imbalanced classes (cat 60%, dog 30%, bird 10%) with inverse-frequency class weights computed on
the TRAINING split and indexed by class id (class_names order), weighted CE summed."""

from collections import Counter

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, EVERY_CHECK, classification_task, mlp, vector_examples

EXPECTED = None
SETTINGS = EVERY_CHECK


def examples():
    keep = {"cat": 1, "dog": 2, "bird": 6}
    rows, seen = [], Counter()
    for e in vector_examples(count=300):
        name = e.fields["animal"]
        seen[name] += 1
        if seen[name] % keep[name] == 0:
            rows.append(e)
    return rows


def make_task():
    task = classification_task(examples=examples())
    counts = Counter(e.fields["animal"] for e in task.splits["train"])
    total = sum(counts.values())
    weight = torch.tensor([total / (len(CLASS_NAMES) * counts[name]) for name in CLASS_NAMES])
    task.loss_sum = lambda logits, b: F.cross_entropy(logits.float(), b["labels"], weight=weight, reduction="sum")
    return task


def build_model(task):
    return mlp(task)
