"""collate masks the last real label of each row ("the last token predicts nothing"): <eos> is never trained."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, pad_collate, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    batch = pad_collate(items)
    lengths = batch["attention_mask"].sum(dim=1)
    for row, length in enumerate(lengths.tolist()):
        batch["labels"][row, length - 1] = IGNORE_INDEX  # the bug: that label is the <eos> target
    return batch


def make_task():
    return generation_task(collate=collate)


def build_model(task):
    return tiny_gpt(task)
