"""shared helpers for exam53 tasks: generic vector tasks and tiny models (self-contained)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}


def vec_collate(items):
    return {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "labels": torch.stack([torch.as_tensor(i["label"]) for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
        **{
            k: torch.stack([torch.as_tensor(i[k]) for i in items])
            for k in items[0]
            if k not in ("inputs", "label", "index")
        },
    }


def vec_encode(e):
    out = {
        "index": e.index,
        "inputs": torch.as_tensor(e.fields["x"], dtype=torch.float32),
        "label": torch.as_tensor(e.fields["y"]),
    }
    for k, v in e.fields.items():
        if k.startswith("b_"):
            out[k[2:]] = torch.as_tensor(v)
    return out


def ce_sum(logits, b):
    return F.cross_entropy(logits.float(), b["labels"], reduction="sum", ignore_index=IGNORE_INDEX)


def cls_task(examples, names, loss_sum=ce_sum, split=None, splits=None, raw=lambda e: e.fields["name"], **kw):
    parts = dict(
        kind="classification",
        splits=splits or make_splits(examples, split or SPLIT),
        encode=vec_encode,
        collate=vec_collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=list(names),
        raw_label=raw,
        info={"num_classes": len(names), "target_unit": "example"},
    )
    parts.update(kw)
    return TaskData(**parts)


def blobs(count=240, classes=("low", "mid", "high"), features=8, seed=0, sep=1.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, sep, size=(len(classes), features))
    ex = []
    for i in range(count):
        y = i % len(classes)
        x = (centres[y] + rng.normal(0, 1, size=features)).astype("float32")
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": y, "name": classes[y]}))
    return ex


class MLP(nn.Module):
    def __init__(self, d_in=8, d_out=3, width=32, dropout=0.0):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(d_in, width), nn.ReLU(), nn.Dropout(dropout), nn.Linear(width, d_out))

    def forward(self, x):
        return self.net(x)
