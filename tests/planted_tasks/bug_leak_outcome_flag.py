"""target leakage: a 'readmitted' flag recorded after the outcome sits among the input features."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import MEASUREMENTS, patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=240, visits=1, seed=8)
    for row in rows:  # known only once the outcome is: 1 exactly for the patients who got worse
        row["x"] = np.append(row["x"], np.float32(row["outcome"] == "worse"))
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples, feature_names=MEASUREMENTS + ["readmitted"])


def build_model(task):
    return tabular_model(task)
