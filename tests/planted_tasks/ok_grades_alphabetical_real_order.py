"""correct: credit rating 'A' (best) < 'B' < 'C' < 'D' regressed as 0,1,2,3 -- alphabetical order IS the real
order; inputs: 5 standardised financial ratios, the rating is a binned noisy linear score."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None
GRADES = ["A", "B", "C", "D"]


def make_task():
    rng = np.random.default_rng(8)
    w = rng.normal(size=5)
    w /= np.linalg.norm(w)
    ex = []
    for i in range(240):
        x = rng.normal(size=5).astype("float32")
        score = x @ w + 0.6 * rng.normal()
        g = int(np.digitize(score, [-0.8, 0.0, 0.8]))
        grade = GRADES[g]
        code = {n: c for c, n in enumerate(sorted(set(GRADES)))}[grade]  # LabelEncoder-style, and correct here
        ex.append(Example(index=i, group=f"firm{i}", fields={"x": x, "rating": grade, "y": float(code)}))
    return vector_task(ex, "group")


def build_model(task):
    return mlp(5, 1)
