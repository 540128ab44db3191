"""copies behind ids: 30 tickets resubmitted in capitals / other punctuation under new ticket ids."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import text_model, text_task, tickets

EXPECTED = {"step": "split_audit", "verdict": "fail"}


def make_task():
    rows = tickets(count=180, seed=4)
    resubmitted = [
        dict(row, ticket_id=f"T-{90000 + i}", text=row["text"].upper().replace(",", " -") + "!!")
        for i, row in enumerate(rows[:30])
    ]
    rows = rows + resubmitted
    examples = [Example(index=i, group=row["ticket_id"], fields=row) for i, row in enumerate(rows)]
    return text_task(examples)


def build_model(task):
    return text_model(task)
