"""correct: time-stamped daily readings split by time (train before validation before test)."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import SPLIT, patient_rows, tabular_model, tabular_task

EXPECTED = None
SETTINGS = {"split_by": "time"}


def make_task():
    rows = patient_rows(patients=240, visits=1, seed=11)
    examples = [Example(index=i, group=f"reading-{i}", fields=row, time=float(i)) for i, row in enumerate(rows)]
    return tabular_task(examples, split={**SPLIT, "by": "time"})


def build_model(task):
    return tabular_model(task)
