"""correct: delivery-time regression with 3 quantile heads (10/50/90%), pinball loss summed over quantiles and
examples; target_count = examples x 3 (one target per quantile)."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._small_tasks import MLP

EXPECTED = None
Q = torch.tensor([0.1, 0.5, 0.9])


def pinball(out, b):
    err = b["labels"][:, None] - out.float()
    return torch.maximum(Q * err, (Q - 1) * err).sum()


def make_task():
    rng = np.random.default_rng(7)
    ex = []
    for i in range(240):
        x = rng.normal(0, 1, size=6).astype("float32")
        y = float(1.0 + 0.8 * x[0] - 0.5 * x[1] + rng.gamma(2.0, 0.3 + 0.2 * abs(x[2])))
        ex.append(Example(index=i, group=f"order{i}", fields={"x": x, "y": y}))
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["x"]), "y": torch.tensor(e.fields["y"])},
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=pinball,
        target_count=lambda b: torch.tensor(b["labels"].numel() * 3),
        predict=lambda out, b: out[:, 1],
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "quantile"},
    )


def build_model(task):
    return MLP(6, 3)
