"""CTC vocab {a:0..e:4} with the blank meant last (class_names end in <blank>, head of 6) but F.ctc_loss left at its
default blank=0: the letter 'a' IS the blank id, so every 'a' in a target is a blank to the loss."""

from tests.planted_tasks._ctc_letters import LETTERS, Model, ctc_task

EXPECTED = {"step": "alignment", "verdict": "fail", "said": "as its CTC blank"}


def make_task():
    return ctc_task(
        {c: i for i, c in enumerate(LETTERS)}, 0, [*LETTERS, "<blank>"], lambda lg, b: b["attention_mask"].sum(1)
    )  # BUG blank=0


def build_model(task):
    return Model()
