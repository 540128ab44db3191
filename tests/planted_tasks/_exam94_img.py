"""Fruit photos (plain user code): 24x24 RGB uint8 HWC arrays as a loader returns them; a red tomato, a green
lime or a blue blueberry blob at a random place on a textured background."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.task import Example, TaskData

CLASSES = ["tomato", "lime", "blueberry"]
COLOUR = {"tomato": (200, 40, 30), "lime": (60, 190, 50), "blueberry": (40, 50, 190)}
S = 24
MEAN = np.array([0.485, 0.456, 0.406], dtype="float32")
STD = np.array([0.229, 0.224, 0.225], dtype="float32")


def photos(n=360, seed=5):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:S, :S]
    exs = []
    for i in range(n):
        c = CLASSES[i % 3]
        img = rng.normal(120, 25, size=(S, S, 3))
        img += rng.normal(0, 20, size=(1, 1, 3))  # lighting
        cy, cx, r = rng.integers(6, S - 6), rng.integers(6, S - 6), rng.integers(3, 6)
        blob = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        img[blob] = np.array(COLOUR[c]) + rng.normal(0, 15, size=(blob.sum(), 3))
        exs.append(Example(index=i, group=f"img{i}", fields={"rgb": np.clip(img, 0, 255).astype("uint8"), "label": c}))
    return exs


def to_tensor(hwc):
    """HWC uint8 -> normalised CHW float (what torchvision ToTensor + Normalize do)."""
    x = (hwc.astype("float32") / 255.0 - MEAN) / STD
    return torch.from_numpy(x).permute(2, 0, 1).contiguous()


def image_task(splits, encode_x):
    ids = {c: i for i, c in enumerate(CLASSES)}

    def encode(e):
        return {"index": e.index, "x": encode_x(e), "label": ids[e.fields["label"]]}

    def collate(items):
        return {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=splits,
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=CLASSES,
        raw_label=lambda e: e.fields["label"],
        info={"num_classes": 3, "target_unit": "example"},
    )


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.body(x))
