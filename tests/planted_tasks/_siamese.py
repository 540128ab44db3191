"""shared: pairs of 8-feature vectors (same item under two noisy captures = 'same', two items = 'different'),
a siamese MLP encoder returning the pair distance, and a TaskData builder."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

CLASSES = ["different", "same"]
MARGIN = 2.0


def pairs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    items = rng.normal(0, 1.5, (120, 8))
    out = []
    for i in range(n):
        a = int(rng.integers(0, 120))
        same = i % 2 == 0
        b = a if same else int((a + rng.integers(1, 120)) % 120)
        xa = (items[a] + rng.normal(0, 0.3, 8)).astype("float32")
        xb = (items[b] + rng.normal(0, 0.3, 8)).astype("float32")
        out.append(
            Example(
                index=i,
                group=f"p{i}",
                fields={"a": xa, "b": xb, "item_a": a, "item_b": b, "label_name": CLASSES[int(same)]},
            )
        )
    return out


def collate(items):
    return {
        "a": torch.stack([i["a"] for i in items]),
        "b": torch.stack([i["b"] for i in items]),
        "labels": torch.tensor([i["y"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def margin_loss(d, b):
    d = d.reshape(b["labels"].shape)
    y = b["labels"].float()  # 1 = same: pull together; 0 = different: push beyond the margin
    return (y * d.pow(2) + (1 - y) * F.relu(MARGIN - d).pow(2)).sum()


def task(examples=None, encode_label=lambda e: CLASSES.index(e.fields["label_name"]), splits=None, loss=margin_loss):
    ex = examples if examples is not None else pairs()
    return TaskData(
        kind="siamese",
        splits=splits or make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "a": torch.from_numpy(e.fields["a"]),
            "b": torch.from_numpy(e.fields["b"]),
            "y": encode_label(e),
        },
        collate=collate,
        loss_sum=loss,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda d, b: (d.reshape(b["labels"].shape) < MARGIN / 2).long(),
        forward=lambda m, b: m(b["a"], b["b"]),
        class_names=list(CLASSES),
        info={"target_unit": "example"},
        initial_loss_tolerance=None,
    )


class Siamese(nn.Module):
    def __init__(self, keepdim=False):
        super().__init__()
        torch.manual_seed(0)
        self.keepdim = keepdim
        self.enc = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, a, b):
        return (self.enc(a) - self.enc(b)).pow(2).sum(-1, keepdim=self.keepdim).add(1e-9).sqrt()
