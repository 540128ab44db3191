"""undeclared group: several visits per patient, but each row is its own group (patient_id ignored)."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=60, visits=4, seed=1)
    # the mistake: the row number as the group, so a patient's visits land in every split
    examples = [Example(index=i, group=f"row-{i}", fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
