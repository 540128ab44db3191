"""house-price-like regression: targets standardised with train's mean/std in the training pipeline
(y_train = (y - mu) / sd) but the validation split is built by another function that keeps y in raw units
(thousands); the model predicts standardised values, so every validation loss is ~1e5 and meaningless."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "targets are on another scale"}


def make_task():
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    ex = []
    for i in range(200):
        x = rng.normal(size=8).astype("float32")
        ex.append(
            Example(index=i, group=f"h{i}", fields={"x": x, "price": float(300 + 80 * (x @ w) / 3 + 10 * rng.normal())})
        )
    splits = make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    ys = np.array([e.fields["price"] for e in splits["train"]])
    mu, sd = ys.mean(), ys.std()
    for e in splits["train"]:
        e.fields["y"] = (e.fields["price"] - mu) / sd
    for split in ("val", "test"):
        for e in splits[split]:
            e.fields["y"] = e.fields["price"]  # the bug: scaler not applied
    return TaskData(
        kind="regression",
        splits=splits,
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.tensor(e.fields["y"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.squeeze(-1).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs)
