"""correct: building damage none < light < moderate < destroyed regressed on its estimated repair cost
in $10k (0, 0.5, 2, 20: in order, very unequal steps) from 4 shaking sensors whose readings saturate at
strong shaking. The code is the real cost, in the category's own order."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None
LEVELS = ["none", "light", "moderate", "destroyed"]
COST = {"none": 0.0, "light": 0.5, "moderate": 2.0, "destroyed": 20.0}


def make_task():
    rng = np.random.default_rng(8)
    ex = []
    for i in range(240):
        level = LEVELS[i % 4]
        shaking = LEVELS.index(level) + 0.3 * rng.normal()
        x = (np.tanh(shaking / 1.5) + 0.08 * rng.normal(size=4)).astype("float32")  # saturating sensors
        ex.append(Example(index=i, group=f"bldg{i}", fields={"x": x, "damage": level, "y": COST[level]}))
    return vector_task(ex, "group")


def build_model(task):
    return mlp(4, 1)
