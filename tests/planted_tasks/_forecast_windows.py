"""shared: a daily series, windows of L=12 -> H-step targets, a GRU forecaster."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

L, H = 12, 3


def series(n=260, seed=1):
    rng = np.random.default_rng(seed)
    d = np.arange(n)
    return 50 + 10 * np.sin(2 * np.pi * d / 7) + np.cumsum(rng.normal(0, 2, size=n))


def horizon_task(target_of, n=260, stats=None):
    s = series(n)
    ts = list(range(L, n - H))
    if stats is None:
        cut = ts[int(len(ts) * 0.8)]  # train part of the series (time split 80/20)
        mu, sd = s[:cut].mean(), s[:cut].std()
    else:
        mu, sd = stats(s)
    ex = []
    for t in ts:
        w, y = s[t + 1 - L : t + 1], target_of(s, t)
        ex.append(
            Example(
                index=len(ex),
                group=f"d{t}",
                time=float(t),
                fields={"window": ((w - mu) / sd).astype("float32"), "y": ((y - mu) / sd).astype("float32")},
            )
        )
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "time", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "x": torch.from_numpy(e.fields["window"]),
            "y": torch.from_numpy(e.fields["y"]),
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
        info={"target_unit": "value"},
    )


class GRUHorizon(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(1, 16, batch_first=True)
        self.head = nn.Linear(16, H)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.head(h[:, -1])
