"""correct: a synthetic linear regression y = X @ w + b + small noise (noise sd 0.02 vs target sd ~3)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None


def make_task():
    rng = np.random.default_rng(0)
    w = rng.normal(size=10)
    ex = []
    for i in range(200):
        x = rng.normal(size=10)
        ex.append(
            Example(index=i, group=f"g{i}", fields={"x": x.tolist(), "y": float(x @ w + 1.5 + 0.02 * rng.normal())})
        )
    return vector_task(ex, "group", val=0.2, test=0.0)


def build_model(task):
    return mlp(10, 1)
