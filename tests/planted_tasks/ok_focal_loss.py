"""correct: imbalanced defect detection (ok 80% / scratch 12% / dent 8%) trained with focal loss (gamma=2), summed."""

import numpy as np
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = None
NAMES = ["ok", "scratch", "dent"]


def focal(logits, b, gamma=2.0):
    logp = F.log_softmax(logits.float(), -1).gather(1, b["labels"][:, None]).squeeze(1)
    return (-((1 - logp.exp()) ** gamma) * logp).sum()


def make_task():
    rng = np.random.default_rng(10)
    centres = rng.normal(0, 1.5, size=(3, 8))
    ex = []
    for i in range(300):
        u = (i * 37) % 100
        y = 0 if u < 80 else (1 if u < 92 else 2)
        x = (centres[y] + rng.normal(0, 1, size=8)).astype("float32")
        ex.append(Example(index=i, group=f"part{i}", fields={"x": x, "y": y, "name": NAMES[y]}))
    return cls_task(ex, NAMES, loss_sum=focal, initial_loss_tolerance=None)


def build_model(task):
    return MLP(8, 3)
