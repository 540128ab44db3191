"""correct: multi-label with partial annotations: each example was labelled for only some of its 4 tags; unknown
tags hold -1 in the label tensor, loss_sum is BCE-with-logits multiplied by the known-tag mask and summed,
target_count counts the known tags, correct_count only known tags."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def known(b):
    return (b["labels"] >= 0).float()


def make_task():
    rng = np.random.default_rng(3)
    weights = rng.normal(size=(8, 4))
    examples = []
    for i in range(200):
        x = rng.normal(size=8).astype("float32")
        tags = (x @ weights > 0).astype("float32")
        tags[rng.random(4) < 0.4] = -1.0  # not annotated
        examples.append(Example(index=i, group=f"g{i}", fields={"x": x, "tags": tags}))
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
        loss_sum=lambda logits, b: (
            F.binary_cross_entropy_with_logits(logits.float(), b["labels"].clamp(min=0), reduction="none") * known(b)
        ).sum(),
        target_count=lambda b: known(b).sum().long(),
        predict=lambda logits, b: (logits > 0).float(),
        correct_count=lambda logits, b: (((logits > 0).float() == b["labels"]).float() * known(b)).sum().long(),
        forward=lambda model, b: model(b["inputs"]),
        info={"target_unit": "tag"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, inputs):
        return self.net(inputs)
