"""shared: two-head classifier (animal head, size head) where each example is annotated for ONE of the heads only
(two datasets merged); labels: animal id, aux_labels: size id; the other head's label is missing (None)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData

ANIMALS, SIZES = ["cat", "dog", "bird"], ["small", "large"]


def examples(n=200, seed=0):
    rng = np.random.default_rng(seed)
    ca, cs = rng.normal(0, 2, (3, 8)), rng.normal(0, 2, (2, 8))
    out = []
    for i in range(n):
        a, s = int(rng.integers(0, 3)), int(rng.integers(0, 2))
        x = (ca[a] + cs[s] + rng.normal(0, 1, 8)).astype("float32")
        f = {"x": x, "animal": ANIMALS[a] if i % 2 == 0 else None, "size": SIZES[s] if i % 2 == 1 else None}
        out.append(Example(index=i, group=f"g{i}", fields=f))
    return out


def task(missing_value=IGNORE_INDEX):
    def enc(e):
        a, s = e.fields["animal"], e.fields["size"]
        return {
            "index": e.index,
            "x": torch.from_numpy(e.fields["x"]),
            "a": ANIMALS.index(a) if a is not None else missing_value,
            "s": SIZES.index(s) if s is not None else missing_value,
        }

    def loss_sum(out, b):
        return F.cross_entropy(out["logits"].float(), b["labels"], reduction="sum") + F.cross_entropy(
            out["size_logits"].float(), b["aux_labels"], reduction="sum"
        )

    return TaskData(
        kind="classification",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=enc,
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.tensor([i["a"] for i in items]),
            "aux_labels": torch.tensor([i["s"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum() + (b["aux_labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out["logits"].argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=list(ANIMALS),
        raw_label=lambda e: e.fields["animal"],
        info={"target_unit": "example", "num_classes": 3},
        initial_loss_tolerance=None,
    )


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        self.a, self.s = nn.Linear(32, 3), nn.Linear(32, 2)

    def forward(self, x):
        h = self.body(x)
        return {"logits": self.a(h), "size_logits": self.s(h)}
