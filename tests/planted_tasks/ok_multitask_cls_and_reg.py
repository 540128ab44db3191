"""correct: multi-task housing: a 3-class 'price band' head + a regression head for (standardised) floor area,
loss = CE + 0.5 * MSE summed over examples; labels = the band, area in its own batch key; output dict with logits."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import cls_task

EXPECTED = None
NAMES = ["cheap", "mid", "pricey"]


def loss(out, b):
    return F.cross_entropy(out["logits"].float(), b["labels"], reduction="sum") + 0.5 * F.mse_loss(
        out["area"].float(), b["area"].float(), reduction="sum"
    )


def make_task():
    rng = np.random.default_rng(13)
    ex = []
    for i in range(240):
        x = rng.normal(0, 1, size=8).astype("float32")
        area = float(0.9 * x[0] + 0.3 * rng.normal())
        y = int(np.digitize(area + 0.5 * x[1], [-0.5, 0.5]))
        ex.append(
            Example(index=i, group=f"h{i}", fields={"x": x, "y": y, "name": NAMES[y], "b_area": np.float32(area)})
        )
    return cls_task(ex, NAMES, loss_sum=loss, predict=lambda out, b: out["logits"].argmax(-1))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        self.cls, self.reg = nn.Linear(32, 3), nn.Linear(32, 1)

    def forward(self, x):
        h = self.body(x)
        return {"logits": self.cls(h), "area": self.reg(h).squeeze(-1)}


def build_model(task):
    return Model()
