"""correct: tabular binary classification (legit/fraud, 25% fraud) on raw, unstandardised features (log amount ~3,
hour in [0, 1], a merchant risk score from an external source), plain unweighted cross-entropy. Control for the
objective check's class-weight diagnosis (bug_leak_target_encoding's objective warning)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None
CLASSES = ["legit", "fraud"]


def make_task():
    rng = np.random.default_rng(2)
    examples = []
    for i in range(240):
        amount, hour, risk = float(rng.lognormal(3, 1)), float(rng.integers(0, 24)), float(rng.uniform(0.1, 0.6))
        label = int(rng.random() < risk * (1.4 if hour < 6 else 0.8))
        x = np.array([np.log(amount), hour / 24, risk], dtype="float32")
        examples.append(Example(index=i, group=f"t{i}", fields={"x": x, "label": CLASSES[label]}))
    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "label": CLASSES.index(e.fields["label"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["label"],
        info={"num_classes": 2, "target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, inputs):
        return self.net(inputs)
