"""Sensor regression: the features are standardised per split with THAT split's own mean and standard
deviation (`StandardScaler().fit_transform` called on validation and test too). The later readings'
sensors drifted (+1.5 sd on features 0-2): scaling them on themselves erases the drift from the inputs
while the target still carries it."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
OWN = True  # the planted mistake; ok_val_scaled_with_train_statistics transforms with training's
SCALE, MEAN = np.array([5, 2, 10, 1, 3, 4]), np.array([50, 10, 200, 0, 7, 30])


def task(own: bool):
    rng = np.random.default_rng(13)
    weights = rng.normal(size=6)
    rows = [
        Example(index=i, group=f"r{i}", fields={"raw": rng.normal(size=6) * SCALE + MEAN, "y": 0.0}) for i in range(240)
    ]
    built = vector_task(rows, "group")
    fitted = {}
    for split in ["train", *[s for s in built.splits if s != "train"]]:
        if split != "train":
            for e in built.splits[split]:
                e.fields["raw"] = e.fields["raw"] + np.r_[1.5 * SCALE[:3], np.zeros(3)]  # later readings drifted
        raw = np.stack([e.fields["raw"] for e in built.splits[split]]) if built.splits[split] else np.zeros((0, 6))
        if split == "train" or own:
            fitted = {"mean": raw.mean(0), "std": raw.std(0)} if len(raw) else fitted
        for e, r in zip(built.splits[split], raw):
            e.fields["x"] = ((r - fitted["mean"]) / fitted["std"]).astype("float32")
            e.fields["y"] = float(((r - MEAN) / SCALE) @ weights + 0.1 * rng.normal())
    return built


def make_task():
    return task(OWN)


def build_model(task):
    return mlp(6, 1)
