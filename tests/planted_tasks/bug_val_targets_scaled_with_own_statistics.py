"""A regression's targets standardised per split with THAT split's own mean and standard deviation
(`StandardScaler().fit_transform(y)` called on validation too); the features are scaled right, with
training's statistics. Validation's targets are then exactly mean 0 / sd 1: its loss is in another unit
than training's, and a shift of the targets would be hidden (an outside examination, 2026-12-05)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "targets have mean 0 and standard deviation 1 exactly"}
OWN = True  # the planted mistake; ok_val_targets_scaled_with_train_statistics uses training's


def task(own: bool):
    rng = np.random.default_rng(21)
    weights = rng.normal(size=6)
    rows = [
        Example(index=i, group=f"r{i}", fields={"x": rng.normal(size=6).astype("float32"), "y": 0.0})
        for i in range(240)
    ]
    built = vector_task(rows, "group")
    prices = {
        s: [float(e.fields["x"] @ weights * 40 + 300 + rng.normal()) for e in part] for s, part in built.splits.items()
    }
    fitted = {}
    for split in ["train", *[s for s in built.splits if s != "train"]]:
        values = np.array(prices[split])
        if split == "train" or (own and len(values)):
            fitted = {"mean": values.mean(), "std": values.std()}
        for e, value in zip(built.splits[split], values):
            e.fields["y"] = float((value - fitted["mean"]) / fitted["std"])
    return built


def make_task():
    return task(OWN)


def build_model(task):
    return mlp(6, 1)
