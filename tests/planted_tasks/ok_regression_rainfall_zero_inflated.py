"""correct: daily rainfall (mm) from 6 standardised weather features: dry days are exactly 0 mm (about
half of them), wet days a continuous amount. Targets piled at one end are what the quantity is, not a
clip."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None


def make_task():
    rng = np.random.default_rng(7)
    w = rng.normal(size=6)
    x = rng.normal(size=(300, 6)).astype("float32")
    wet = (x @ w) / np.linalg.norm(w) + 0.3 * rng.normal(size=300)
    y = np.where(wet > 0, 4.0 * wet + rng.gamma(2.0, 0.5, size=300), 0.0)
    ex = [Example(index=i, group=f"d{i}", fields={"x": x[i], "y": float(y[i])}) for i in range(300)]
    return vector_task(ex, "group")


def build_model(task):
    return mlp(6, 1)
