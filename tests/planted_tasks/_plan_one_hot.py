"""shared: churn from a subscription plan (a string field, one-hot in the inputs) and three numbers, split by time;
the plan 'family' was withdrawn before the validation period. ``PER_SPLIT``: the one-hot columns come from
``pd.get_dummies`` on each split's own rows (sorted plans; validation, without 'family', padded with a zero column at
the end to the training width), the mistake; else from the training split's plans for every split."""

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._plan_codes import CLASSES, PLANS


def make_task(per_split: bool) -> TaskData:
    rng = np.random.default_rng(2)
    effect = dict(zip(PLANS, [-2.0, -1.0, 0.5, 1.5, 2.0, -1.5, 0.0, 1.0]))
    rows = []
    for i in range(600):
        offered = PLANS if i < 400 else [p for p in PLANS if p != "family"]
        plan, numbers = offered[rng.integers(len(offered))], rng.normal(size=3).astype("float32")
        churns = effect[plan] + 0.7 * numbers[0] + 0.3 * rng.normal() > 0
        fields = {"plan": plan, "num": numbers, "name": CLASSES[int(churns)]}
        rows.append(Example(index=i, group=f"c{i}", time=float(i), fields=fields))
    splits = make_splits(rows, {"by": "time", "val_fraction": 0.2, "test_fraction": 0.0})
    width = len(pd.get_dummies(pd.Series([e.fields["plan"] for e in splits["train"]])).columns)
    inputs = {}
    for examples in splits.values():
        fitted_on = examples if per_split else splits["train"]
        columns = sorted({e.fields["plan"] for e in fitted_on})
        for e in examples:
            dummies = np.zeros(width, dtype="float32")
            dummies[columns.index(e.fields["plan"])] = 1
            inputs[e.index] = np.concatenate([e.fields["num"], dummies])

    return TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {"index": e.index, "x": inputs[e.index], "y": CLASSES.index(e.fields["name"])},
        collate=lambda items: {
            "x": torch.from_numpy(np.stack([i["x"] for i in items])),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.cross_entropy(out, b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda model, b: model(b["x"]),
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["name"],
        info={"num_classes": 2, "target_unit": "example"},
    )


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3 + len(PLANS), 32), nn.ReLU(), nn.Linear(32, 2))
