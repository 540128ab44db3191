"""correct: a regression on whole-number float targets (ratings 1-5 as floats), MSE, no correct_count."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = None
SETTINGS = {
    **EVERY_CHECK,
    "tiny_overrides": ["optim.lr=3e-3"],
}


def make_task():
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    ex = []
    for i in range(160):
        x = rng.normal(size=8).astype("float32")
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": float(np.round(2 * np.tanh(x @ w) + 3))}))
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
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
