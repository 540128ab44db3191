"""correct: a token tagger whose collate gives each row's length as a Python list that loss_sum reads per row
(a review: the loss-alone probe and objective cut tensors only, kept the whole list for one row, and failed it)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None


def encode(e):
    return {"index": e.index, "x": torch.from_numpy(e.fields["x"]), "y": torch.tensor(e.fields["y"])}


def collate(items):
    width = max(len(i["x"]) for i in items)
    x, y = torch.zeros(len(items), width, 6), torch.full((len(items), width), -100)
    for row, item in enumerate(items):
        x[row, : len(item["x"])] = item["x"]
        y[row, : len(item["y"])] = item["y"]
    lengths = [len(i["x"]) for i in items]
    return {"x": x, "labels": y, "lengths": lengths, "index": torch.tensor([i["index"] for i in items])}


def loss_sum(out, b):
    return sum(F.cross_entropy(o[:n], y[:n], reduction="sum") for o, y, n in zip(out, b["labels"], b["lengths"]))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layer = nn.Linear(6, 4)

    def forward(self, x):
        return self.layer(x)


def make_task():
    rng = np.random.default_rng(0)
    examples = []
    for i in range(64):
        n = 3 if i % 4 == 0 else int(rng.integers(4, 9))
        fields = {"x": rng.normal(size=(n, 6)).astype("float32"), "y": rng.integers(0, 4, size=n).tolist()}
        examples.append(Example(index=i, group=f"g{i}", fields=fields))
    return TaskData(
        kind="token_classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != -100).sum(),
        predict=lambda o, b: o.argmax(-1),
        forward=lambda m, b: m(b["x"]),
        info={},
        initial_loss_tolerance=None,
    )
