"""imbalanced classification: the rare class's rows were copied ten times to balance it, each copy given a group
of its own, before the split: validation holds copies of training rows. The audit called them identical by
chance (the inputs taking few distinct values), which twelve continuous measurements per row never are."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

NAMES = ("common", "rare")


def examples(seed=2):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(200):
        y = int(i % 10 == 0)  # 10% rare
        x = (rng.normal(size=12) + 1.5 * y).astype("float32")
        rows += [(x, y)] * (10 if y else 1)  # the bug: oversampled before the split
    return [Example(i, f"row{i}", {"x": x, "y": y, "name": NAMES[y]}) for i, (x, y) in enumerate(rows)]


EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "identical example in two splits"}


def make_task():
    return cls_task(
        examples(), NAMES, splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    )


def build_model(task):
    return MLP(d_in=12, d_out=2)
