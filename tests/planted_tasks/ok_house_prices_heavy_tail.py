"""correct: house price (in $) from 6 standardised features; lognormal prices spanning ~3 orders of
magnitude (studio flats to estates), MSE on the raw price in thousands."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None


def make_task():
    rng = np.random.default_rng(3)
    w = rng.normal(size=6)
    w /= np.linalg.norm(w)
    ex = []
    for i in range(240):
        x = rng.normal(size=6).astype("float32")
        price_k = float(np.exp(np.log(300) + 1.1 * (x @ w) + 0.25 * rng.normal()))  # thousands of $
        ex.append(
            Example(index=i, group=f"h{i}", fields={"x": x, "city": ["north", "south", "east"][i % 3], "y": price_k})
        )
    return vector_task(ex, "group")


def build_model(task):
    return mlp(6, 1)
