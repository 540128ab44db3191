"""multi-label topics (3 independent tags, multi-hot float targets): loss_sum uses F.cross_entropy with the
multi-hot vector as a soft target (a softmax over the tags, as for one class) while predict thresholds each
logit at 0: two present tags compete for one unit of probability, and the logits the loss drives do not
encode 'present' as > 0."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = {"step": "objective", "verdict": "fail", "said": "predict reads what the loss never trains"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(8, 3))
    examples = []
    for i in range(200):
        x = rng.normal(size=8).astype("float32")
        tags = (x @ weights > 0).astype("float32")
        if tags.sum() == 0:
            tags[int(np.argmax(x @ weights))] = 1.0
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
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
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
