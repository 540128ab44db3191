"""shared: a daily series and a tiny GRU forecaster over [B, L, 1] windows (plain PyTorch)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

L = 12


def series(n=240, seed=0):
    rng = np.random.default_rng(seed)
    d = np.arange(n)
    return 50 + 10 * np.sin(2 * np.pi * d / 7) + np.cumsum(rng.normal(0, 2, size=n))


def window_task(make_window, target_of, n=240, norm=None):
    s = series(n)
    mu, sd = norm if norm is not None else (50.0, 10.0)
    ex = []
    for t in range(L, n - 1):
        w = make_window(s, t)
        ex.append(
            Example(
                index=len(ex),
                group=f"d{t}",
                time=float(t),
                fields={"window": ((w - mu) / sd).astype("float32"), "y": float((target_of(s, t) - mu) / sd)},
            )
        )
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "time", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "x": torch.from_numpy(e.fields["window"]),
            "y": torch.tensor(e.fields["y"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]).unsqueeze(-1),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out,
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


class GRUForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(1, 16, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.head(h[:, -1]).squeeze(-1)
