"""House prices from 6 standardised features: the targets are standardised (mean 0, spread 1) and then
'clipped to [0, 1]' as if they had been min-max scaled: every price below the mean becomes 0.0 and
every one a spread above it 1.0, so about half the data trains towards one value (from an outside
examination of planted tasks)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "pile up at both ends of their range"}
CLIPPED = True  # the planted mistake; ok_regression_target_min_max_scaled scales into [0, 1] instead


def task(clipped: bool):
    rng = np.random.default_rng(41)
    w = rng.normal(size=6)
    x = rng.normal(size=(300, 6)).astype("float32")
    price = 250_000 + 60_000 * (x @ w) / np.linalg.norm(w) + 10_000 * rng.normal(size=300)
    if clipped:
        y = np.clip((price - price.mean()) / price.std(), 0.0, 1.0)  # BUG: standardised, then clipped
    else:
        y = (price - price.min()) / (price.max() - price.min())
    ex = [Example(index=i, group=f"h{i}", fields={"x": x[i], "y": float(y[i])}) for i in range(300)]
    return vector_task(ex, "group")


def make_task():
    return task(CLIPPED)


def build_model(task):
    return mlp(6, 1)
