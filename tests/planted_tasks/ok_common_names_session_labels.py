"""correct: app sessions of 60 users (4 each), one row per session, grouped by session; users named by
first name, last name and birth year (no id), and the label belongs to the session, not the user (an
outcome drawn per session): a user's sessions on both sides of the split share nothing to learn."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import OUTCOMES, patient_rows, tabular_model, tabular_task

EXPECTED = None
FIRST = ["anna", "ben", "carla", "dev", "elif", "femi", "gus", "hana"]
LAST = ["smith", "garcia", "kim", "novak", "okoro", "rossi", "tanaka", "weber"]


def make_task():
    rows = patient_rows(patients=60, visits=4, seed=3)
    rng = np.random.default_rng(3)
    users = {}
    for row in rows:
        pid = row.pop("patient_id")
        if pid not in users:
            users[pid] = (FIRST[int(rng.integers(8))], LAST[int(rng.integers(8))], int(rng.integers(1960, 2004)))
        row.pop("hospital"), row.pop("age")
        row["first_name"], row["last_name"], row["birth_year"] = users[pid]
        row["outcome"] = OUTCOMES[int(rng.integers(len(OUTCOMES)))]  # the session's own outcome
    examples = [Example(index=i, group=f"session-{i:05d}", fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
