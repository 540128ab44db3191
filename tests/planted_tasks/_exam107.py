"""shared (from an outside examination's correct tasks, 2026-12-06, kept as false-alarm guards): a small MLP, and grey blob images framed on the left whose target,
the blob's brightness, a flip does not change."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

SIDE = 12


def mlp(inputs: int, outputs: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(inputs, 32), nn.ReLU(), nn.Linear(32, outputs))


def brightness_blobs() -> TaskData:
    """A blob always in the left third (a fixed camera); its brightness regressed; every other training image
    flipped left-right, its brightness kept (a flip does not change it)."""
    rng = np.random.default_rng(8)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    examples = []
    for i in range(300):
        cx, cy, brightness = rng.uniform(1, SIDE / 3), rng.uniform(1, SIDE - 2), rng.uniform(0.3, 1.5)
        image = brightness * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 3.0) + rng.normal(0, 0.05, (SIDE, SIDE))
        examples.append(Example(index=i, group=f"img{i}", fields={"image": image.astype("float32"), "y": brightness}))
    splits = make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    trained = {e.index for e in splits["train"]}

    def encode(e):
        image = e.fields["image"][:, ::-1].copy() if e.index in trained and e.index % 2 == 0 else e.fields["image"]
        return {"index": e.index, "inputs": torch.from_numpy((image.reshape(-1) - 0.1) / 0.3), "y": e.fields["y"] - 0.9}

    return TaskData(
        kind="regression",
        splits=splits,
        encode=encode,
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["y"] for i in items], dtype=torch.float32),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.squeeze(-1).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.squeeze(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )
