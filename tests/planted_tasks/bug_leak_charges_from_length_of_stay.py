"""regression of a patient's length of stay; the feature table was joined with billing, whose total charges
are computed from the stay itself (800 * exp(stay / 3), within 2%): a monotone, not a linear, copy of the
target, which the |correlation| of values (about 0.9) let through."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "of their order"}


def make_task():
    rng = np.random.default_rng(1)
    examples = []
    for index in range(240):
        age, severity, admission = rng.uniform(20, 90), rng.uniform(0, 1), rng.integers(0, 4)
        stay = max(0.5, 2 + 0.03 * age + 4 * severity + rng.normal(0, 1.5))
        charges = 800 * np.exp(stay / 3) * rng.uniform(0.98, 1.02)
        features = np.array([age / 50, severity, admission / 3, charges / 5000], dtype="float32")
        examples.append(Example(index=index, group=f"p{index}", fields={"x": features, "stay": float(stay)}))

    def collate(items):
        return {
            "x": torch.stack([item["x"] for item in items]),
            "labels": torch.tensor([item["y"] for item in items], dtype=torch.float32),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="regression",
        splits=make_splits(examples, SPLIT),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["x"]), "y": e.fields["stay"]},
        collate=collate,
        loss_sum=lambda out, batch: F.mse_loss(out.squeeze(-1), batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda out, batch: out.squeeze(-1),
        forward=lambda model, batch: model(batch["x"]),
    )


def build_model(task):
    return nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
