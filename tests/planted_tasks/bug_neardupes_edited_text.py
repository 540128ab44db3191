"""near-duplicates: 40 tickets re-filed with a typo and a sign-off, same team, new ticket ids."""

from pilot.data.task import Example
from tests.planted_tasks._leak_tasks import text_model, text_task, tickets

EXPECTED = {"step": "split_audit", "verdict": "warn"}


def typo(text: str, at: int) -> str:
    """Swap two neighbouring letters of the text's ``at``-th word of four letters or more."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 4]
    i = long[at % len(long)]
    w = words[i]
    words[i] = w[0] + w[2] + w[1] + w[3:]
    return " ".join(words)


def make_task():
    rows = tickets(count=180, seed=6)
    refiled = [
        dict(row, ticket_id=f"T-{90000 + i}", text=typo(row["text"], i) + " thx") for i, row in enumerate(rows[:40])
    ]
    rows = rows + refiled
    examples = [Example(index=i, group=row["ticket_id"], fields=row) for i, row in enumerate(rows)]
    return text_task(examples)


def build_model(task):
    return text_model(task)
