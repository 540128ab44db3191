"""correct: per-pixel segmentation (a [B, 1, H, W] image, a [B, H, W] mask of 2 classes, a [B, 2, H, W]
output, cross-entropy summed over pixels); each pixel is a target."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None
SIDE = 10


def _examples(count: int = 160) -> list[Example]:
    rng = np.random.default_rng(13)
    examples = []
    for i in range(count):
        image = np.zeros((SIDE, SIDE), dtype="float32")
        for _ in range(3):  # a few rectangles on noise
            y, x = rng.integers(0, SIDE - 3, size=2)
            h, w = rng.integers(2, 5, size=2)
            image[y : y + h, x : x + w] = 1.0
        image += rng.normal(size=(SIDE, SIDE)).astype("float32") * 0.2
        examples.append(Example(index=i, group=f"g{i}", fields={"image": image, "mask": (image > 0.5).astype("int64")}))
    return examples


def _encode(example: Example) -> dict:
    image = torch.from_numpy(example.fields["image"])[None]
    return {"index": example.index, "inputs": image, "mask": torch.from_numpy(example.fields["mask"])}


def make_task():
    return TaskData(
        kind="segmentation",
        splits=make_splits(_examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=_encode,
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.stack([i["mask"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(1),
        forward=lambda model, b: model(b["inputs"]),
        info={"class_names": ["background", "object"], "num_classes": 2, "target_unit": "pixel"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                 nn.ReLU(), nn.Conv2d(16, 2, 1))  # fmt: skip

    def forward(self, inputs):
        return self.net(inputs)
