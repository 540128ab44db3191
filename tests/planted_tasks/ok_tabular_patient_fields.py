"""correct: tabular visits with patient_id, hospital and age fields, grouped and split by patient."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = None


def make_task():
    rows = patient_rows(patients=60, visits=4, seed=10)
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
