"""next-day demand forecasting: the lag features are window = series[t-4 : t+2] (meant series[t-5 : t+1]): the last
'lag' is tomorrow's value itself, the target. Split by time (correctly)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = {"step": "split_audit", "verdict": "warn"}
SETTINGS = {"split_by": "time"}
LAGS = 6


def make_task():
    rng = np.random.default_rng(0)
    days = np.arange(260)
    series = 50 + 10 * np.sin(2 * np.pi * days / 7) + np.cumsum(rng.normal(0, 2, size=len(days)))
    ex = []
    for t in range(LAGS, len(days) - 1):
        window = series[t - LAGS + 2 : t + 2]  # BUG: off by one, holds series[t + 1]
        x = ((window - 50) / 10).astype("float32")
        ex.append(
            Example(
                index=len(ex),
                group=f"d{t}",
                time=float(t),
                fields={"lags": x, "dow": int(t % 7), "y": float((series[t + 1] - 50) / 10)},
            )
        )
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "time", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["lags"]),
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
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(LAGS, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs)
