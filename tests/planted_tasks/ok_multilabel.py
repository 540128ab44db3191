"""correct: multi-label tagging (3 independent tags per example, multi-hot float labels, BCE summed over
tags); each tag is a target."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None


def make_task():
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(8, 3))
    examples = []
    for i in range(200):
        x = rng.normal(size=8).astype("float32")
        examples.append(Example(index=i, group=f"g{i}", fields={"x": x, "tags": (x @ weights > 0).astype("float32")}))
    return TaskData(
        kind="multilabel",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "tags": torch.from_numpy(e.fields["tags"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["tags"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, b: F.binary_cross_entropy_with_logits(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: (logits > 0).float(),
        forward=lambda model, b: model(b["inputs"]),
        info={"target_unit": "tag"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, inputs):
        return self.net(inputs)
