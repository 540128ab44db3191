"""correct: the textbook "predict the next value of a sine wave" tutorial: a noiseless sum of two sinusoids,
next step from the last 12, split by time."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = None
SETTINGS = {"split_by": "time"}
NOISE = 0.0


def make_task():
    t = np.arange(260)
    rng = np.random.default_rng(0)
    s = np.sin(2 * np.pi * t / 25) + 0.5 * np.sin(2 * np.pi * t / 9.3) + NOISE * rng.normal(size=len(t))
    ex = [
        Example(index=i, group=f"t{k}", time=float(k), fields={"window": s[k - 12 : k], "y": float(s[k])})
        for i, k in enumerate(range(12, len(s)))
    ]
    return window_regression(ex, by="time")


def build_model(task):
    return GRU()
