"""Classification task: scikit-learn's 8x8 handwritten digits, 10 classes.

The data set ships inside scikit-learn (no download). It publishes no writer
id, so the group of an image is a hash of its pixels: identical images always
share a split, and the split audit can only check content, which we say.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Batch, Example, TaskData, logits_of

CLASS_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def load_examples() -> list[Example]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    examples = []
    for index, (pixels, label) in enumerate(zip(digits.data, digits.target)):
        pixels = (pixels / 16.0).astype("float32")  # 0..16 intensities -> 0..1
        group = hashlib.sha1(pixels.tobytes()).hexdigest()[:16]
        examples.append(
            Example(
                index=index,
                group=group,
                fields={"pixels": pixels, "label": int(label), "label_name": CLASS_NAMES[int(label)]},
            )
        )
    return examples


def encode_example(example: Example) -> dict[str, Any]:
    return {
        "index": example.index,
        "inputs": torch.from_numpy(example.fields["pixels"]),
        "label": example.fields["label"],
    }


def collate(items: list[dict[str, Any]]) -> Batch:
    return {
        "inputs": torch.stack([item["inputs"] for item in items]),
        "labels": torch.tensor([item["label"] for item in items], dtype=torch.long),
        "index": torch.tensor([item["index"] for item in items]),
    }


def loss_sum(output, batch: Batch) -> torch.Tensor:
    return F.cross_entropy(logits_of(output).float(), batch["labels"], reduction="sum")


def target_count(batch: Batch) -> torch.Tensor:
    return torch.tensor(batch["labels"].numel())


def predict(output, batch: Batch) -> torch.Tensor:
    return logits_of(output).argmax(dim=-1)


def make_task(in_features: int = 64, num_classes: int = 10, split=None) -> TaskData:
    if num_classes != len(CLASS_NAMES) or in_features != 64:
        raise ValueError(
            f"data.num_classes={num_classes}, data.in_features={in_features}: the digits "
            f"data set has {len(CLASS_NAMES)} classes of 64 pixels. Fix: leave both at their defaults."
        )
    return TaskData(
        kind="classification",
        splits=make_splits(load_examples(), split),
        encode=encode_example,
        collate=collate,
        loss_sum=loss_sum,
        target_count=target_count,
        predict=predict,
        forward=lambda model, batch: model(batch["inputs"]),
        info={
            "class_names": list(CLASS_NAMES),
            "num_classes": num_classes,
            "in_features": in_features,
            "target_unit": "example",
        },
    )
