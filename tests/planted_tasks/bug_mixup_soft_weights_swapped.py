"""Mixup with soft targets whose weights are swapped: the input lam * x + (1 - lam) * x_partner is trained
towards (1 - lam) * y + lam * y_partner, so the class that dominates the input gets the smaller share of the
target (ok_mixup_soft_labels_blobs mixes both with lam). An outside examination's miss: the mixup check
returned at soft labels."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "weights are the other way round"}


def make_task():
    task = classification_task()
    train = task.splits["train"]
    ids = {n: i for i, n in enumerate(task.class_names)}
    train_idx = {e.index for e in train}

    def encode(e):
        y = F.one_hot(torch.tensor(ids[e.fields["animal"]]), 3).float()
        x = torch.from_numpy(e.fields["x"])
        if e.index in train_idx:
            r = np.random.default_rng(e.index)
            o = train[int(r.integers(len(train)))]
            lam = float(r.beta(0.4, 0.4))
            x = lam * x + (1 - lam) * torch.from_numpy(o.fields["x"])
            y = (1 - lam) * y + lam * F.one_hot(torch.tensor(ids[o.fields["animal"]]), 3).float()  # swapped
        return {"index": e.index, "inputs": x, "label": y}

    task.encode = encode
    task.collate = lambda items: {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "labels": torch.stack([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }
    task.target_count = lambda b: torch.tensor(b["labels"].shape[0])
    task.correct_count = lambda logits, b: (logits.argmax(-1) == b["labels"].argmax(-1)).sum()
    return task


def build_model(task):
    return mlp(task)
