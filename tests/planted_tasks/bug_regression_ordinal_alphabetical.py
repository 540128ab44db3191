"""Ordinal severity ('low' < 'medium' < 'high') from 6 measurements, trained as a regression on the
category's code, but the codes come from `sorted(set(names))` (a LabelEncoder): high=0, low=1, medium=2.
The target is not monotone in severity: the MSE head must learn a fold, and the loss still falls."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
LEVELS = ["low", "medium", "high"]
ALPHABETICAL = True  # the planted mistake; ok_regression_ordinal_in_order codes low=0, medium=1, high=2


def task(alphabetical: bool):
    rng = np.random.default_rng(6)
    weights = rng.normal(size=6)
    rows = []
    for i in range(210):
        x = rng.normal(size=6).astype("float32")
        score = x @ weights / np.linalg.norm(weights) + 0.2 * rng.normal()
        rows.append((i, x, LEVELS[int(np.digitize(score, [-0.45, 0.45]))]))
    names = sorted({name for *_, name in rows}) if alphabetical else LEVELS
    code = {name: float(at) for at, name in enumerate(names)}
    examples = [Example(index=i, group=f"case{i}", fields={"x": x, "severity": s, "y": code[s]}) for i, x, s in rows]
    return vector_task(examples, "group")


def make_task():
    return task(ALPHABETICAL)


def build_model(task):
    return mlp(6, 1)
