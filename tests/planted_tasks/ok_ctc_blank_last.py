"""correct: CTC with letters a..e = ids 0..4 and the blank LAST (id 5), F.ctc_loss(blank=5)."""

from tests.planted_tasks._ctc_letters import LETTERS, Model, ctc_task

EXPECTED = None


def make_task():
    return ctc_task(
        {c: i for i, c in enumerate(LETTERS)}, 5, [*LETTERS, "<blank>"], lambda lg, b: b["attention_mask"].sum(1)
    )


def build_model(task):
    return Model()
