"""undeclared group with no id column: app sessions of 60 users (4 each), one row per session, grouped by
session id; the user is identified only by (first_name, last_name, birth_year) -- each field alone is
shared by many users -- and churn is a per-user label, so one user's sessions straddle the splits."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "together name one identity"}
FIRST = ["anna", "ben", "carla", "dev", "elif", "femi", "gus", "hana"]
LAST = ["smith", "garcia", "kim", "novak", "okoro", "rossi", "tanaka", "weber"]


def make_task():
    rows = patient_rows(patients=60, visits=4, seed=3)
    rng = np.random.default_rng(3)
    users = {}
    for row in rows:
        pid = row.pop("patient_id")
        if pid not in users:  # a person: name and birth year; no id
            users[pid] = (FIRST[int(rng.integers(8))], LAST[int(rng.integers(8))], int(rng.integers(1960, 2004)))
        row.pop("hospital"), row.pop("age")
        row["first_name"], row["last_name"], row["birth_year"] = users[pid]
    examples = [Example(index=i, group=f"session-{i:05d}", fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
