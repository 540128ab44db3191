"""shared: 12x12 grey images of one bright blob; the target is the blob's x coordinate in [0, 1] (a
regression). Augmentation in encode, training split only: every other example flipped left-right.
``FLIP_TARGET``: the target flipped with the image (1 - x), as it must be; else left as it was, the mistake."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

SIDE = 12


def make_task(flip_target: bool) -> TaskData:
    rng = np.random.default_rng(8)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    examples = []
    for i in range(300):
        cx, cy = rng.uniform(1, SIDE - 2), rng.uniform(1, SIDE - 2)
        image = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 2.0) + rng.normal(0, 0.05, (SIDE, SIDE))
        fields = {"image": image.astype("float32"), "x": float(cx / (SIDE - 1))}
        examples.append(Example(index=i, group=f"img{i}", fields=fields))
    splits = make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    trained = {e.index for e in splits["train"]}

    def encode(e):
        image, x = e.fields["image"], e.fields["x"]
        if e.index in trained and e.index % 2 == 0:
            image = image[:, ::-1].copy()
            x = 1.0 - x if flip_target else x
        return {"index": e.index, "inputs": torch.from_numpy(image.reshape(-1) * 2 - 0.5), "y": x * 2 - 1}

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


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(SIDE * SIDE, 64), nn.ReLU(), nn.Linear(64, 1))
