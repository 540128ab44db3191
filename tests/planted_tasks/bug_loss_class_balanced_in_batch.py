"""imbalanced 3 classes; a 'class-balanced' loss that averages CE per class WITHIN the micro-batch and sums the
class means (x batch size to make it a 'sum'): weights depend on the micro-batch's class mix."""

import numpy as np
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "it is not a sum over targets"}
NAMES = ["common", "uncommon", "rare"]


def loss(logits, b):
    ce = F.cross_entropy(logits.float(), b["labels"], reduction="none")
    total = 0.0
    for c in b["labels"].unique():
        total = total + ce[b["labels"] == c].mean()
    return total * len(b["labels"]) / len(b["labels"].unique())  # BUG: per-batch class means


def make_task():
    rng = np.random.default_rng(12)
    centres = rng.normal(0, 1.5, size=(3, 8))
    ex = []
    for i in range(240):
        u = (i * 37) % 10
        y = 0 if u < 6 else (1 if u < 9 else 2)
        x = (centres[y] + rng.normal(0, 1, size=8)).astype("float32")
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": y, "name": NAMES[y]}))
    return cls_task(ex, NAMES, loss_sum=loss)


def build_model(task):
    return MLP(8, 3)
