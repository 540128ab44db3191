"""shared: churn from a subscription plan (a string field, embedded by its code) and three numbers. ``PER_SPLIT``:
the codes come from ``pd.factorize`` run on each split's own rows (first-seen order), the mistake; else from one
mapping fitted on the training split."""

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

PLANS = ["basic", "family", "gold", "premium", "student", "trial", "business", "senior"]
CLASSES = ["stays", "churns"]


def make_task(per_split: bool) -> TaskData:
    rng = np.random.default_rng(1)
    effect = dict(zip(PLANS, [-2.0, -1.0, 0.5, 1.5, 2.0, -1.5, 0.0, 1.0]))
    rows = []
    for i in range(600):
        plan, numbers = PLANS[rng.integers(len(PLANS))], rng.normal(size=3).astype("float32")
        churns = effect[plan] + 0.7 * numbers[0] + 0.3 * rng.normal() > 0
        rows.append(
            Example(index=i, group=f"c{i}", fields={"plan": plan, "num": numbers, "name": CLASSES[int(churns)]})
        )
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    fitted = {
        plan: code for code, plan in enumerate(pd.factorize(pd.Series([e.fields["plan"] for e in splits["train"]]))[1])
    }
    codes = {}
    for examples in splits.values():
        own = pd.factorize(pd.Series([e.fields["plan"] for e in examples]))[0] if examples else []
        for e, code in zip(examples, own):
            codes[e.index] = int(code) if per_split else fitted[e.fields["plan"]]

    def collate(items):
        return {
            "num": torch.stack([torch.from_numpy(i["num"]) for i in items]),
            "plan": torch.tensor([i["plan"] for i in items]),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {
            "index": e.index,
            "num": e.fields["num"],
            "plan": codes[e.index],
            "y": CLASSES.index(e.fields["name"]),
        },
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out, b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda model, b: model(b["num"], b["plan"]),
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["name"],
        info={"num_classes": 2, "target_unit": "example"},
    )


class PlanNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.plan = nn.Embedding(len(PLANS), 8)
        self.mlp = nn.Sequential(nn.Linear(3 + 8, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, num, plan):
        return self.mlp(torch.cat([num, self.plan(plan)], dim=-1))
