"""Multi-label tags with rare positives (5-20%): BCE's pos_weight, meant to up-weight them, computed as
pos/neg instead of neg/pos, so positives weigh 0.05-0.25 and the rare tags are pushed to 'no' (an outside
examination, 2026-12-05: only a vague initial-loss warning, which its correct twin escaped by chance)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = {"step": "objective", "verdict": "warn", "said": "weighs rare tags' positives less than their negatives"}
INVERTED = True  # the planted mistake; ok_multilabel_pos_weight_balanced uses neg/pos


def task(inverted: bool) -> TaskData:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(240, 8)).astype("float32")
    scores = x @ rng.normal(size=(8, 4))
    tags = (scores > np.quantile(scores, [0.95, 0.9, 0.85, 0.8], axis=0).diagonal()).astype("float32")
    examples = [Example(index=i, group=f"g{i}", fields={"x": x[i], "tags": tags[i]}) for i in range(240)]
    positives = tags.mean(0)
    weight = positives / (1 - positives) if inverted else (1 - positives) / positives
    pos_weight = torch.tensor(weight, dtype=torch.float32)
    return TaskData(
        kind="multilabel",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.from_numpy(e.fields["tags"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([it["inputs"] for it in items]),
            "labels": torch.stack([it["y"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        },
        loss_sum=lambda logits, b: F.binary_cross_entropy_with_logits(
            logits.float(), b["labels"], pos_weight=pos_weight, reduction="sum"
        ),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: (logits > 0).float(),
        forward=lambda model, b: model(b["inputs"]),
        info={"target_unit": "tag"},
        initial_loss_tolerance=None,  # a weighted loss starts elsewhere than ln(2)
    )


def make_task() -> TaskData:
    return task(INVERTED)


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, inputs):
        return self.net(inputs)
