"""correct: daily store sales with an upward trend + weekly seasonality + noise; predict tomorrow from the
trailing 14 days, split by time (train = past, val = most recent). Windows only look back."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = None
SETTINGS = {"split_by": "time"}


def make_task():
    rng = np.random.default_rng(6)
    t = np.arange(300)
    s = 100 + 0.4 * t + 15 * np.sin(2 * np.pi * t / 7) + 5 * rng.normal(size=len(t))
    s = (s / 100.0).astype("float32")  # in hundreds of units
    ex = [
        Example(index=i, group=f"d{k}", time=float(k), fields={"window": s[k - 14 : k], "y": float(s[k])})
        for i, k in enumerate(range(14, len(s)))
    ]
    return window_regression(ex, by="time")


def build_model(task):
    return GRU()
