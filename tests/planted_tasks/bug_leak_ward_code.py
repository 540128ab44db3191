"""target leakage through a categorical code: 'ward_code' (the ward a patient was moved to AFTER the outcome
was known) is an input; each outcome has its own three wards, numbered without order (no threshold or
correlation gives it away, but the code alone fixes the label)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import MEASUREMENTS, patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "the class looked up from its value"}
WARDS = {"stable": [12, 47, 83], "worse": [5, 61, 90], "better": [29, 38, 74]}


def make_task():
    rows = patient_rows(patients=240, visits=1, seed=9)
    rng = np.random.default_rng(9)
    for row in rows:
        code = WARDS[row["outcome"]][int(rng.integers(3))]
        row["x"] = np.append(row["x"], np.float32(code))
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples, feature_names=MEASUREMENTS + ["ward_code"])


def build_model(task):
    return tabular_model(task)
