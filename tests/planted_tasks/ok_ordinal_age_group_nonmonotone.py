"""correct: age group child < adult < senior regressed on its ordinal code 0, 1, 2 (in the right order)
from 5 physiological measurements; grip strength, bone density and lung capacity peak in adulthood
(inverted U), only a noisy 'grey hair' score rises with age. An MLP learns the fold; the codes follow
the category's own order, which is what the task means."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None
GROUPS = ["child", "adult", "senior"]
PEAK = {"child": 0.0, "adult": 1.0, "senior": 0.35}  # strength-like features, inverted U in age


def make_task():
    rng = np.random.default_rng(7)
    ex = []
    for i in range(210):
        g = GROUPS[i % 3]
        strength = PEAK[g] + 0.15 * rng.normal(size=3)
        grey = {"child": 0.0, "adult": 0.2, "senior": 0.6}[g] + 0.5 * rng.normal()
        x = np.concatenate([strength, [grey], rng.normal(size=1)]).astype("float32")
        ex.append(Example(index=i, group=f"person{i}", fields={"x": x, "age_group": g, "y": float(GROUPS.index(g))}))
    return vector_task(ex, "group")


def build_model(task):
    return mlp(5, 1)
