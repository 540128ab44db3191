"""undeclared group: reviews keyed by an opaque reviewer code (no "id" in its name), split per review."""

import hashlib

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import patient_rows, tabular_model, tabular_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def make_task():
    rows = patient_rows(patients=50, visits=5, seed=2)
    examples = []
    for i, row in enumerate(rows):
        fields = {"reviewer": "r" + hashlib.sha1(row.pop("patient_id").encode()).hexdigest()[:7], **row}
        examples.append(Example(index=i, group=f"review-{i}", fields=fields))  # the reviewer is not the group
    return tabular_task(examples)


def build_model(task):
    return tabular_model(task)
