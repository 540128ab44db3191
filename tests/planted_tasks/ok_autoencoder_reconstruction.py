"""correct (by design): a compressing autoencoder for anomaly scores on 8 sensor readings: target = the input
vector itself (8 float columns), MSE. The target being a function of the input is the task, not a leak."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None


def make_task():
    rng = np.random.default_rng(2)
    z = rng.normal(0, 1, size=(240, 3))
    A = rng.normal(0, 1, size=(3, 8))
    X = (z @ A + 0.3 * rng.normal(0, 1, size=(240, 8))).astype("float32")
    ex = [Example(index=i, group=f"g{i}", fields={"x": X[i]}) for i in range(240)]
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["x"])},
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.stack([i["x"] for i in items]).clone(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out,
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "value"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 3), nn.ReLU(), nn.Linear(3, 8))

    def forward(self, x):
        return self.net(x)
