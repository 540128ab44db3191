"""shared: the multi-label topic tags of ``_multilabel`` exported as one string per article ("sports,
politics"), turned into multi-hot columns by pandas' ``str.get_dummies(sep=sep)``; the columns' names
are the declared class names."""

import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import TaskData
from tests.planted_tasks._multilabel import examples


def dummies_task(sep):
    articles = examples()
    columns = pd.Series([", ".join(e.fields["tags"]) for e in articles]).str.get_dummies(sep=sep)
    for e, row in zip(articles, columns.to_numpy(dtype="float32")):
        e.fields["y"] = row
    names = list(columns.columns)
    return TaskData(
        kind="multilabel",
        splits=make_splits(articles, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.from_numpy(e.fields["y"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.binary_cross_entropy_with_logits(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out > 0).float(),
        forward=lambda m, b: m(b["inputs"]),
        class_names=names,
        info={"target_unit": "tag", "tag_names": names},
        initial_loss_tolerance=None,
    )


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, len(task.class_names)))
