"""A one-logit binary classifier trained with BCE-with-logits whose predict thresholds the *logit* at 0.5
(the probability's threshold applied to the logit: class 1 only where p > 0.62), so every row scored
between is trained as class 1 and counted as class 0 (an outside examination, 2026-12-05)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = {"step": "objective", "verdict": "fail", "said": "predict and loss_sum split the two classes"}
THRESHOLD = 0.5  # the planted mistake; ok_binary_logit_thresholded_at_zero uses 0


def task(threshold: float) -> TaskData:
    rng = np.random.default_rng(3)
    weights = rng.normal(size=6)
    examples = []
    for i in range(240):
        x = rng.normal(size=6).astype("float32")
        examples.append(
            Example(index=i, group=f"g{i}", fields={"x": x, "y": float(x @ weights + 0.5 * rng.normal() > 0)})
        )
    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.tensor(e.fields["y"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([it["inputs"] for it in items]),
            "labels": torch.stack([it["y"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        },
        loss_sum=lambda out, b: F.binary_cross_entropy_with_logits(
            out.squeeze(-1).float(), b["labels"], reduction="sum"
        ),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out.squeeze(-1) > threshold).float(),
        forward=lambda model, b: model(b["inputs"]),
        class_names=["no", "yes"],
        raw_label=lambda e: ["no", "yes"][int(e.fields["y"])],
        info={"target_unit": "example", "num_classes": 2},
    )


def make_task() -> TaskData:
    return task(THRESHOLD)


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs)
