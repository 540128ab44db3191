"""bug: predict forgets the shift loss_sum makes: each prediction is read one position off, so the
loss learns while every accuracy (and the recovery of the tiny subset) is measured on the wrong tokens."""

from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "tiny_subset", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"]}


def make_task():
    return generation_task(predict=lambda logits, batch: logits.argmax(dim=-1))


def build_model(task):
    return tiny_gpt(task)
