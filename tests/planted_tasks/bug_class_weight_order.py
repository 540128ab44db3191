"""imbalanced classes (cat 60%, dog 30%, bird 10%): inverse-frequency class weights computed over
sorted(Counter(names)) (bird, cat, dog) but indexed by class_names' ids (cat, dog, bird): the majority
class gets the rare class's weight."""

from collections import Counter

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp, vector_examples

EXPECTED = {"step": "objective", "verdict": "warn", "said": "loss_sum weights the classes"}


def examples():
    keep = {"cat": 1, "dog": 2, "bird": 6}  # keep every cat, one dog in 2, one bird in 6
    rows, seen = [], Counter()
    for e in vector_examples(count=300):
        name = e.fields["animal"]
        seen[name] += 1
        if seen[name] % keep[name] == 0:
            rows.append(e)
    return rows


def make_task():
    rows = examples()
    counts = Counter(e.fields["animal"] for e in rows)
    total = sum(counts.values())
    # the bug: the weights follow sorted names, the ids follow CLASS_NAMES
    weight = torch.tensor([total / (len(counts) * n) for _, n in sorted(counts.items())], dtype=torch.float32)
    assert [n for n, _ in sorted(counts.items())] != list(CLASS_NAMES)
    return classification_task(
        examples=rows,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], weight=weight, reduction="sum"),
    )


def build_model(task):
    return mlp(task)
