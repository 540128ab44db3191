"""correct: CTC with a stride-2 conv front end; input lengths halved like the frames (len // 2); blank = 0,
letters 1..5."""

from tests.planted_tasks._ctc_letters import LETTERS, Model, ctc_task

EXPECTED = None


def make_task():
    return ctc_task(
        {c: i + 1 for i, c in enumerate(LETTERS)},
        0,
        ["<blank>", *LETTERS],
        lambda lg, b: b["attention_mask"].sum(1) // 2,
    )


def build_model(task):
    return Model(downsample=True)
