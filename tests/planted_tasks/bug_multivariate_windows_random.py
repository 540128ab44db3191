"""bug: 2-D [time=16, features=3] multivariate windows (temperature, humidity, load), stride 2, split at random."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}


def make_task():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=(500, 3)), axis=0) / 10
    ex = [
        Example(index=i, group=f"w{t}", fields={"window": x[t - 16 : t], "y": float(x[t, 2])})
        for i, t in enumerate(range(16, 500, 2))
    ]
    return window_regression(ex, by="group")


def build_model(task):
    return GRU(channels=3)
