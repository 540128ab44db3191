"""correct: SimCLR / NT-Xent: each example gives TWO augmented views (fixed per example: jitter + feature
dropout), collate stacks them into 2B rows, labels[i] = the row of i's other view ((i + B) mod 2B), self-
similarity masked out; every one of the 2B rows is a target (the standard NT-Xent loss)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None
D = 16


def examples():
    rng = np.random.default_rng(9)
    return [Example(index=i, group=f"u{i}", fields={"x": rng.normal(size=D).astype("float32")}) for i in range(160)]


def encode(e):
    rng = np.random.default_rng(1000 + e.index)
    views = [(e.fields["x"] + 0.1 * rng.normal(size=D)) * (rng.random(D) > 0.1) for _ in range(2)]
    return {"index": e.index, "views": torch.tensor(np.stack(views), dtype=torch.float32)}


def collate(items):
    b = len(items)
    x = torch.cat([torch.stack([i["views"][0] for i in items]), torch.stack([i["views"][1] for i in items])])
    return {
        "inputs": x,
        "labels": (torch.arange(2 * b) + b) % (2 * b),
        "index": torch.tensor([i["index"] for i in items]),
    }


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x):
        z = F.normalize(self.net(x), dim=-1)
        sim = z @ z.T / 0.2
        return sim.masked_fill(torch.eye(len(x), dtype=torch.bool), -1e9)


def make_task():
    return TaskData(
        kind="contrastive",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "view"},
        initial_loss_tolerance=None,
    )


def build_model(task):
    return Encoder()
