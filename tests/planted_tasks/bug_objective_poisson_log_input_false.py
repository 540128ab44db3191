"""count regression (calls per hour) whose model outputs a log-rate, trained with PoissonNLLLoss(log_input=False),
which reads its input as the rate itself and takes its log: a negative output gives NaN, and the pilot said the
loss was NaN without naming why (an outside examination)."""

import numpy as np
import torch
import torch.nn as nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._small_tasks import MLP

EXPECTED = {"step": "objective", "verdict": "fail", "said": "log_input=True"}

POISSON = nn.PoissonNLLLoss(log_input=False, reduction="sum")  # the bug: the output is a log-rate


def make_task():
    rng = np.random.default_rng(30)
    ex = []
    for i in range(240):
        x = rng.normal(size=5).astype("float32")
        y = float(rng.poisson(np.exp(1.0 + 0.6 * x[0] - 0.4 * x[1])))
        ex.append(Example(index=i, group=f"h{i}", fields={"x": x, "calls": y}))
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["x"]), "y": e.fields["calls"]},
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.tensor([i["y"] for i in items], dtype=torch.float32),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: POISSON(out.squeeze(-1).float(), b["labels"]),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1).exp(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


def build_model(task):
    return MLP(5, 1)
