"""copies behind ids: an export joined twice; 40 rows reappear under a new record id and load time."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "fail"}


def make_task():
    rows = patient_rows(patients=200, visits=1, seed=3)
    for i, row in enumerate(rows):
        row.update(record_id=f"rec-{i:05d}", loaded_at="2024-03-01")
    copies = [dict(row, record_id=f"rec-{90000 + i:05d}", loaded_at="2024-03-08") for i, row in enumerate(rows[:40])]
    rows = rows + copies
    # each record is its own group: the copy's record id differs, so the raw hash differs too
    examples = [Example(index=i, group=row["record_id"], fields=row) for i, row in enumerate(rows)]
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
