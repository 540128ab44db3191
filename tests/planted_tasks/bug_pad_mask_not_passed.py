"""bug: left padding, and forward never hands the model attention_mask: every row attends to its pads."""

from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    return generation_task(padding_side="left", forward=lambda model, batch: model(batch["input_ids"]))


def build_model(task):
    return tiny_gpt(task)
