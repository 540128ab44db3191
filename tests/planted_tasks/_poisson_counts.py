"""Count regression (store visits per hour, 0-20) for a model that outputs a log-rate; the loss is the task's."""

from collections.abc import Callable

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._small_tasks import MLP


def counts_task(loss_sum: Callable) -> TaskData:
    rng = np.random.default_rng(8)
    ex = []
    for i in range(240):
        x = rng.normal(0, 1, size=5).astype("float32")
        y = float(rng.poisson(np.exp(1.2 + 0.6 * x[0] - 0.3 * x[1])))
        ex.append(Example(index=i, group=f"h{i}", fields={"x": x, "y": y}))
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["x"]), "y": torch.tensor(e.fields["y"])},
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1).exp(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


def build_model(task):
    return MLP(5, 1)
