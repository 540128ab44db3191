"""Vector-task plumbing for vector and image tasks (ok_images_per_image_norm, the flip tasks)."""

import numpy as np
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


def image_task(examples, classes, class_names, encode=None, val=0.25, field="pixels"):
    """A vector task of images held as arrays in ``field`` (labels in "y"), split by group; ``encode``
    replaces the plain one (augmentations). Returns the task and the training examples' indices."""
    splits = make_splits(examples, {"by": "group", "val_fraction": val, "test_fraction": 0.0})
    built = vector_task(examples, "group", classes=classes, val=val, test=0.0)
    if encode is None:

        def encode(e):
            pixels = np.asarray(e.fields[field], dtype="float32").reshape(-1).copy()
            return {"index": e.index, "inputs": torch.tensor(pixels), "label": torch.tensor(e.fields["y"])}

    built.splits, built.encode, built.class_names = splits, encode, list(class_names)
    built.raw_label = lambda e: class_names[e.fields["y"]]
    return built, {e.index for e in splits["train"]}
