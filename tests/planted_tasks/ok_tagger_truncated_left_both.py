"""correct: NER on word pieces, long documents truncated keeping the end, ids and piece labels both cut with
[-MAX:] (a first piece whose word lost its start keeps its word's tag: fine for this check)."""

from tests.planted_tasks._tag_truncation import MAX, build, task

EXPECTED = None


def make_task():
    return task(lambda labels: labels[-MAX:])


def build_model(task):
    return build()
