"""shared: predict an exam score (0-100) from 6 study features
the model ends in a sigmoid ('a score is a
share of the maximum'); targets divided by `scale`; MSE summed, one target per example."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK  # noqa: F401


def examples(n=240, seed=8):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=6)
    out = []
    for i in range(n):
        x = rng.normal(size=6).astype("float32")
        score = float(np.clip(100 / (1 + np.exp(-(x @ w) / 2)) + rng.normal(0, 3), 0, 100))
        out.append(Example(index=i, group=f"s{i}", fields={"x": x, "score": round(score, 1)}))
    return out


def task(scale):
    return TaskData(
        kind="regression",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.tensor(e.fields["score"] / scale, dtype=torch.float32),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out,
        correct_count=lambda out, b: ((out - b["labels"]).abs() * scale < 5).sum(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
        initial_loss_tolerance=None,
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x)).squeeze(-1)


class ReluHead(nn.Module):
    """The same body ending in a ReLU ('a score is never negative'), alive at the start: every output above 0."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1), nn.ReLU())
        nn.init.constant_(self.net[2].bias, 1.0)

    def forward(self, x):
        return self.net(x).squeeze(-1)
