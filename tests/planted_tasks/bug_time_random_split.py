"""time-stamped data split at random: daily readings, each its own group, validated on the past."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=240, visits=1, seed=7)
    examples = [
        Example(index=i, group=f"reading-{i}", fields=row, time=float(i))  # day i
        for i, row in enumerate(rows)
    ]
    return tabular_task(examples)  # split by group: every reading on its own, at random in time


def build_model(task):
    return tabular_model(task)
