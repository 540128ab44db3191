"""correct: retail price of products from two families, phone cases (~$15) and laptops (~$1500), ~100x apart;
feature 0 is a standardised 'weight' that tells the families apart, the rest spec features. Target genuinely
bimodal, one unit ($)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None


def make_task():
    rng = np.random.default_rng(5)
    ex = []
    for i in range(240):
        laptop = i % 3 == 0
        x = rng.normal(size=6).astype("float32")
        x[0] = (1.5 if laptop else -0.7) + 0.2 * rng.normal()  # weight, standardised
        base = 1500.0 if laptop else 15.0
        y = base * float(np.exp(0.15 * x[1] + 0.1 * x[2] + 0.1 * rng.normal()))
        ex.append(Example(index=i, group=f"sku{i}", fields={"x": x, "family": "laptop" if laptop else "case", "y": y}))
    return vector_task(ex, "group")


def build_model(task):
    return mlp(6, 1)
