"""tabular: the scaler is fit_transform'ed on TRAIN, but val/test keep raw clinical units (forgot
scaler.transform on them): validation inputs sit hundreds of standard deviations away."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
UNITS = np.array([80.0, 120.0, 37.0, 97.0, 100.0, 1.5], dtype="float32")  # clinical centres
SPREAD = np.array([12.0, 15.0, 0.6, 2.0, 20.0, 0.5], dtype="float32")


def make_task():
    rows = patient_rows(patients=60, visits=4, seed=12)
    for row in rows:
        row["x"] = (UNITS + SPREAD * row["x"]).astype("float32")  # raw units, as exported
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    task = tabular_task(examples)
    train = np.stack([e.fields["x"] for e in task.splits["train"]])
    mean, std = train.mean(0), train.std(0)
    for e in task.splits["train"]:  # the bug: only train is transformed
        e.fields["x"] = ((e.fields["x"] - mean) / std).astype("float32")
    return task


def build_model(task):
    return tabular_model(task)
