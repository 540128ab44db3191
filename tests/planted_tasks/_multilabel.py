"""shared: multi-label topic tags of 12-feature vectors (5 tags; each tag fires from its own feature block);
multi-hot float targets, BCE-with-logits summed, target_count = examples x tags. The tag -> column mapping
is built by `vocab_for(split_examples)`."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

TAGS = ["sports", "politics", "tech", "health", "travel"]


def examples(n=240, seed=5):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        on = rng.random(len(TAGS)) < np.array([0.5, 0.4, 0.3, 0.2, 0.15])
        x = rng.normal(0, 0.5, size=12)
        for k, flag in enumerate(on):
            if flag:
                x[2 * k : 2 * k + 2] += 2.0
        tags = [TAGS[k] for k in rng.permutation(len(TAGS)) if on[k]]  # tags come in no order in the raw data
        out.append(Example(index=i, group=f"a{i}", fields={"x": x.astype("float32"), "tags": tags}))
    return out


def task(vocab_for):
    splits = make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    column = {name: vocab_for(part) for name, part in splits.items()}
    where = {e.index: name for name, part in splits.items() for e in part}

    def encode(e):
        cols = column[where[e.index]]
        y = torch.zeros(len(TAGS))
        for t in e.fields["tags"]:
            y[cols[t]] = 1.0
        return {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "y": y}

    return TaskData(
        kind="multilabel",
        splits=splits,
        encode=encode,
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.binary_cross_entropy_with_logits(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out > 0).float(),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "tag", "tag_names": TAGS},
        initial_loss_tolerance=None,
    )


def first_seen(part):
    order = {}
    for e in part:
        for t in e.fields["tags"]:
            order.setdefault(t, len(order))
    return order


def fixed(part):
    return {t: k for k, t in enumerate(TAGS)}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, len(TAGS)))

    def forward(self, x):
        return self.net(x)
