"""Adult height from 6 standardised bone-length measurements, pooled from two hospitals: hospital A
records height in cm, hospital B in metres, and the merge never converts: a third of the targets are
100x smaller, with nothing in the inputs to tell which (MSE is dominated by the cm rows, and the
model averages the two scales)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
CONVERTED = False  # the planted mistake; ok_regression_units_converted converts hospital B's metres


def task(converted: bool):
    rng = np.random.default_rng(15)
    w = rng.normal(size=6)
    ex = []
    for i in range(240):
        x = rng.normal(size=6).astype("float32")
        cm = 170 + 8 * (x @ w) / np.linalg.norm(w) + 2 * rng.normal()
        site = "B" if i % 3 == 0 else "A"
        y = cm / 100 if site == "B" and not converted else cm  # BUG: hospital B's metres never converted
        ex.append(Example(index=i, group=f"pt{i}", fields={"x": x, "site": site, "y": float(y)}))
    return vector_task(ex, "group")


def make_task():
    return task(CONVERTED)


def build_model(task):
    return mlp(6, 1)
