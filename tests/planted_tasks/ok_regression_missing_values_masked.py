"""correct: three lab values regressed per patient, some never measured (NaN in the data): collate fills them
with 0 beside an `observed` mask that loss_sum and target_count apply. The tiny subset judged the filled zeros
too (a [rows, 3] output's gradient was not read as positions), and failed a subset it had learned to 3e-7."""

import numpy as np
import torch
import torch.nn as nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK, SPLIT

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=1e-2"]}  # a small MLP from scratch, not a fine-tune


def make_task():
    rng = np.random.default_rng(24)
    weights, examples = rng.normal(size=(8, 3)), []
    for index in range(200):
        x = rng.normal(size=8).astype("float32")
        y = (x @ weights + rng.normal(0, 0.2, 3)).astype("float32")
        y[rng.random(3) < 0.3] = np.nan
        examples.append(Example(index=index, group=f"patient{index}", fields={"x": x, "y": y}))

    def encode(example):
        return {"index": example.index, "x": torch.from_numpy(example.fields["x"]), "y": torch.from_numpy(example.fields["y"])}  # fmt: skip

    def collate(items):
        values = torch.stack([item["y"] for item in items])
        return {
            "x": torch.stack([item["x"] for item in items]),
            "labels": torch.nan_to_num(values, 0.0),
            "observed": ~torch.isnan(values),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="regression",
        splits=make_splits(examples, SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, batch: ((out - batch["labels"]) ** 2 * batch["observed"]).sum(),
        target_count=lambda batch: batch["observed"].sum(),
        predict=lambda out, batch: out,
        forward=lambda model, batch: model(batch["x"]),
    )


def build_model(task):
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
