"""regression: collate 'shuffles within the micro-batch' (perm = torch.randperm(n); inputs = inputs[perm])
and forgets to permute the targets (and index): every input meets another row's target."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "another example's input"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def collate(items):
    inputs = torch.stack([i["inputs"] for i in items])
    perm = torch.randperm(len(items))
    return {
        "inputs": inputs[perm],
        "labels": torch.stack([i["y"] for i in items]).float(),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    ex = []
    for i in range(160):
        x = rng.normal(size=8).astype("float32")
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": float(np.tanh(x @ w) + 0.05 * rng.normal())}))
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.tensor(e.fields["y"]),
        },
        collate=collate,
        loss_sum=lambda out, b: F.mse_loss(out.squeeze(-1).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1),
        correct_count=lambda out, b: ((out.squeeze(-1) - b["labels"]).abs() < 0.1).sum(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs)
