"""shared: star ratings (1-5, continuous: 3.7 stars) regressed from six numbers. ``LABEL_DTYPE``: the dtype collate
builds ``labels`` with: torch.float32, or torch.long (a classifier's collate copied: 3.7 trained as 3), the mistake."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData


def make_task(label_dtype: torch.dtype) -> TaskData:
    rng = np.random.default_rng(5)
    weights, x = rng.normal(size=6), rng.normal(size=(240, 6)).astype("float32")
    rating = 3.0 + 0.9 * (x @ weights) / np.linalg.norm(weights) + 0.1 * rng.normal(size=240)
    examples = [Example(index=i, group=f"h{i}", fields={"x": x[i], "y": float(rating[i])}) for i in range(240)]
    return TaskData(
        kind="regression",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "y": e.fields["y"]},
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["y"] for i in items], dtype=label_dtype),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.squeeze(-1).float(), b["labels"].float(), reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
