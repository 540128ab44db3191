"""shared: multi-label music tags of 10-feature vectors (5 tags), the raw records' tag lists sometimes naming a
tag twice ('jazz, jazz': an export that repeats a tag). `task(targets, loss)` builds the task from how a record's
multi-hot row is made of its tag list and which binary cross-entropy loss_sum calls."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

TAGS = ["jazz", "rock", "pop", "folk", "blues"]


def examples(n=200, seed=32):
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(10, len(TAGS)))
    out = []
    for i in range(n):
        x = rng.normal(size=10).astype("float32")
        on = [TAGS[k] for k in range(len(TAGS)) if (x @ weights)[k] > 0.5]
        if on and i % 3 == 0:
            on = [*on, on[0]]  # the export repeats a tag now and then
        out.append(Example(index=i, group=f"track{i}", fields={"x": x, "tags": on}))
    return out


def summed_one_hots(ids):
    """The row as a sum of one-hots: a tag listed twice counts 2."""
    if not ids:
        return torch.zeros(len(TAGS))
    return F.one_hot(torch.tensor(ids), len(TAGS)).sum(0).float()


def tag_set(ids):
    """The row from the set of tags: a tag listed twice is still 1."""
    row = torch.zeros(len(TAGS))
    row[sorted(set(ids))] = 1.0
    return row


def task(targets, loss_sum):
    return TaskData(
        kind="multilabel",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "tags": [TAGS.index(t) for t in e.fields["tags"]],
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([targets(i["tags"]) for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out > 0).float(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "tag", "tag_names": TAGS},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, len(TAGS)))

    def forward(self, inputs):
        return self.net(inputs)
