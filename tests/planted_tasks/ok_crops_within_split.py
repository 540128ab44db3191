"""correct: augmentation by random crops: 60 independent recordings, 4 random 16-step crops of each (they
overlap), each crop labelled with its recording's mean level; all crops of a recording share its group."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = None


def make_task():
    rng = np.random.default_rng(3)
    ex = []
    for rec in range(60):
        level = rng.normal()
        x = level + np.cumsum(rng.normal(0, 0.3, size=40))
        for _ in range(4):
            a = int(rng.integers(0, 40 - 16))
            ex.append(Example(index=len(ex), group=f"rec{rec}", fields={"window": x[a : a + 16], "y": float(level)}))
    return window_regression(ex, by="group", val=0.25)


def build_model(task):
    return GRU()
