"""target leakage: a 'severity_score' computed from the label (id + rounding noise) is an input."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import MEASUREMENTS, OUTCOMES, patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=240, visits=1, seed=9)
    rng = np.random.default_rng(9)
    for row in rows:
        score = OUTCOMES.index(row["outcome"]) + rng.normal(0.0, 0.01)
        row["x"] = np.append(row["x"], np.float32(score))
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples, feature_names=MEASUREMENTS + ["severity_score"])


def build_model(task):
    return tabular_model(task)
