"""multi-label tags: the model ends in nn.Sigmoid() (so its outputs 'are probabilities', predict > 0.5) and
loss_sum applies binary_cross_entropy_with_logits to them: a second sigmoid, outputs squeezed into
(0.5, 0.73), gradients vanish."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "lies in [0, 1]"}
SETTINGS = EVERY_CHECK


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
        loss_sum=lambda out, b: F.binary_cross_entropy_with_logits(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out > 0.5).float(),
        forward=lambda model, b: model(b["inputs"]),
        info={"target_unit": "tag"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3), nn.Sigmoid())

    def forward(self, inputs):
        return self.net(inputs)
