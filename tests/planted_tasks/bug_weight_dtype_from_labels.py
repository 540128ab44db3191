"""per-example annotator confidence weights (0.5-1.0) built in collate with dtype=labels.dtype (int64, copied
from the line above): every confidence below 1.0 truncates to 0, so about 3 of 4 examples get weight 0
while target_count still counts them."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._common import classification_task, mlp, vector_examples

EXPECTED = {"step": "objective", "verdict": "fail"}


def examples():
    rng = np.random.default_rng(5)
    out = []
    for e in vector_examples():
        conf = 1.0 if rng.random() < 0.25 else float(rng.uniform(0.5, 0.99))
        out.append(Example(index=e.index, group=e.group, fields={**e.fields, "confidence": conf}))
    return out


def encode(e):
    ids = {"cat": 0, "dog": 1, "bird": 2}
    return {
        "index": e.index,
        "inputs": torch.from_numpy(e.fields["x"]),
        "label": ids[e.fields["animal"]],
        "confidence": e.fields["confidence"],
    }


def collate(items):
    labels = torch.tensor([i["label"] for i in items], dtype=torch.long)
    weights = torch.tensor([i["confidence"] for i in items], dtype=labels.dtype)
    return {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "labels": labels,
        "weights": weights,
        "index": torch.tensor([i["index"] for i in items]),
    }


def loss_sum(logits, b):
    return (F.cross_entropy(logits.float(), b["labels"], reduction="none") * b["weights"]).sum()


def make_task():
    return classification_task(examples=examples(), encode=encode, collate=collate, loss_sum=loss_sum)


build_model = mlp
