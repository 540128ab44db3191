"""correct: ordinal 'severity' 0..4 (none, mild, moderate, severe, critical) with a CORAL-style head: 4 cumulative
logits P(y > k), BCE-with-logits against (y > k) summed over the 4 thresholds and examples, target_count = examples;
predict = number of thresholds passed."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = None
NAMES = ["none", "mild", "moderate", "severe", "critical"]


def loss(out, b):
    ks = torch.arange(4)
    target = (b["labels"][:, None] > ks).float()
    return F.binary_cross_entropy_with_logits(out.float(), target, reduction="sum")


def make_task():
    rng = np.random.default_rng(9)
    ex = []
    for i in range(250):
        x = rng.normal(0, 1, size=6).astype("float32")
        z = 1.2 * x[0] + 0.6 * x[1] + rng.normal(0, 0.5)
        y = int(np.digitize(z, [-1.2, -0.4, 0.4, 1.2]))
        ex.append(Example(index=i, group=f"p{i}", fields={"x": x, "y": y, "name": NAMES[y]}))
    return cls_task(
        ex,
        NAMES,
        loss_sum=loss,
        predict=lambda out, b: (out > 0).sum(-1),
        initial_loss_tolerance=None,
        info={"num_classes": 5, "target_unit": "example"},
    )


def build_model(task):
    return MLP(6, 4)
