"""correct: 3 classes nearly balanced (cat 36%, dog 33%, bird 31%), inverse-frequency class weights from the
training split indexed by class id; weighted CE summed."""

from collections import Counter

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp, vector_examples

EXPECTED = None


def examples():
    rows = []
    for e in vector_examples(count=300):
        if e.fields["animal"] == "bird" and e.index % 9 == 2:
            continue
        if e.fields["animal"] == "dog" and e.index % 17 == 1:
            continue
        rows.append(e)
    return rows


def make_task():
    task = classification_task(examples=examples())
    counts = Counter(e.fields["animal"] for e in task.splits["train"])
    total = sum(counts.values())
    weight = torch.tensor([total / (len(CLASS_NAMES) * counts[n]) for n in CLASS_NAMES])
    task.loss_sum = lambda logits, b: F.cross_entropy(logits.float(), b["labels"], weight=weight, reduction="sum")
    return task


def build_model(task):
    return mlp(task)
