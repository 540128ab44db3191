"""correct: a regression on whole-number float targets (ratings 1-5 as floats), MSE, no correct_count."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None
SETTINGS = {
    **EVERY_CHECK,
    "tiny_overrides": ["optim.lr=3e-3"],
}


def make_task():
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    examples = []
    for i in range(160):
        x = rng.normal(size=8).astype("float32")
        examples.append(Example(index=i, group=f"g{i}", fields={"x": x, "y": float(np.round(2 * np.tanh(x @ w) + 3))}))
    task = vector_task(examples, "group", val=0.25, test=0.0)
    task.correct_count = None  # recovery judged by pilot's own rule for values
    return task


def build_model(task):
    return mlp(8, 1)
