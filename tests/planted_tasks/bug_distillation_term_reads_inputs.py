"""BUG: 3-class task whose 3 input features are per-class sensor scores (informative: argmax agrees with the
label ~75%); the loss was meant to be CE on the labels with a small KD term from a teacher, but the KD term
reads b['inputs'] (a copy-paste slip) with weight 0.9, so the model is trained to imitate its own inputs."""

import numpy as np
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = {"step": "alignment", "verdict": "fail"}
NAMES = ("a", "b", "c")


def loss(logits, b):
    kd = F.kl_div(
        F.log_softmax(logits.float(), -1), F.log_softmax(b["inputs"].float(), -1), log_target=True, reduction="sum"
    )
    return 0.9 * kd + 0.1 * F.cross_entropy(logits.float(), b["labels"], reduction="sum")


def make_task():
    rng = np.random.default_rng(5)
    ex = []
    for i in range(240):
        y = i % 3
        x = (2 * rng.normal(0, 1, size=3)).astype("float32")
        x[y] += 2.5
        ex.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": y, "name": NAMES[y]}))
    return cls_task(ex, NAMES, loss_sum=loss, initial_loss_tolerance=None)


def build_model(task):
    return MLP(3, 3)
