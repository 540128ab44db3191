"""correct: multi-label (5 tags, sigmoid + BCE summed): tags co-occur (tag 1 implies tag 0) and tag 4 is rare
(~4% positives); multi-hot float labels."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None


def make_task():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(10, 5))
    bias = np.array([0.0, -0.5, 0.3, 0.0, -3.2])
    ex = []
    for i in range(240):
        x = rng.normal(size=10).astype("float32")
        t = (x @ W / 3 + bias + 0.3 * rng.normal(size=5) > 0).astype("float32")
        t[0] = max(t[0], t[1])
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "tags": t}))
    return TaskData(
        kind="multilabel",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
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
        class_names=["news", "politics", "sport", "tech", "obituary"],
        info={"target_unit": "tag"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5))

    def forward(self, inputs):
        return self.net(inputs)
