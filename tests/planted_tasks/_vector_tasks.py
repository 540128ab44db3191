"""Vector-task plumbing for correct vector tasks (ok_images_per_image_norm)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import TaskData


def vector_task(examples, split_by, classes=None, val=0.15, test=0.15):
    regression = classes is None

    def encode(e):
        y = torch.tensor(e.fields["y"], dtype=torch.float32 if regression else torch.long)
        return {"index": e.index, "inputs": torch.tensor(e.fields["x"], dtype=torch.float32), "label": y}

    def collate(items):
        return {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    if regression:

        def loss(out, b):
            return F.mse_loss(out.squeeze(-1).float(), b["labels"], reduction="sum")

        def predict(out, b):
            return out.squeeze(-1)
    else:

        def loss(out, b):
            return F.cross_entropy(out.float(), b["labels"], reduction="sum")

        def predict(out, b):
            return out.argmax(-1)

    return TaskData(
        kind="regression" if regression else "classification",
        splits=make_splits(examples, {"by": split_by, "val_fraction": val, "test_fraction": test}),
        encode=encode,
        collate=collate,
        loss_sum=loss,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=predict,
        forward=lambda m, b: m(b["inputs"]),
        correct_count=(lambda out, b: ((out.squeeze(-1) - b["labels"]).abs() < 0.5).sum()) if regression else None,
        class_names=None if regression else [str(c) for c in range(classes)],
        raw_label=None if regression else (lambda e: str(e.fields["y"])),
        info={"target_unit": "example", **({} if regression else {"num_classes": classes})},
        initial_loss_tolerance=None if regression else 0.5,
    )


def mlp(inputs, outputs):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(inputs, 32), nn.ReLU(), nn.Linear(32, outputs))
