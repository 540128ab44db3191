"""near-duplicates: augmentation (1% jitter) applied before the split, each copy a new group."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=150, visits=1, seed=5)
    rng = np.random.default_rng(5)
    scale = np.stack([row["x"] for row in rows]).std(axis=0)
    jittered = [
        dict(row, patient_id=f"A{i:04d}", x=(row["x"] + rng.normal(0, 0.01, scale.shape) * scale).astype("float32"))
        for i, row in enumerate(rows[:60])
    ]
    rows = rows + jittered
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
