"""shared: a daily demand forecast on one series (weekly season, a random walk, noise), split by time: lags 1-3, the
7-day rolling mean and standard deviation, the day of the week (sin, cos). ``TODAY_IN_WINDOW``: the rolling window
is ``series[t - 6 : t + 1]`` (pandas ``rolling(7)`` without ``.shift(1)``: it holds the day to forecast), the
mistake; else ``series[t - 7 : t]``."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData


def make_task(today_in_window: bool) -> TaskData:
    rng = np.random.default_rng(1)
    days = np.arange(320)
    series = 100 + 15 * np.sin(2 * np.pi * days / 7) + np.cumsum(rng.normal(0, 3, 320)) + rng.normal(0, 8, 320)
    examples = []
    for t in range(8, 320):
        window = series[t - 6 : t + 1] if today_in_window else series[t - 7 : t]
        week = 2 * np.pi * t / 7
        x = np.array([*series[t - 3 : t][::-1], window.mean(), window.std(), np.sin(week), np.cos(week)], "float32")
        x[:5] = (x[:5] - 100) / 20
        fields = {"x": x, "y": float((series[t] - 100) / 20), "date": f"day{t}"}
        examples.append(Example(index=len(examples), group=f"day{t}", time=float(t), fields=fields))
    return TaskData(
        kind="regression",
        splits=make_splits(examples, {"by": "time", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "y": e.fields["y"]},
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["y"] for i in items], dtype=torch.float32),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.squeeze(-1).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(7, 32), nn.ReLU(), nn.Linear(32, 1))
