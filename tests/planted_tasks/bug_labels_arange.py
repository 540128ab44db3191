"""classification without raw class names declared: collate sets labels to the row index (torch.arange)
instead of each example's label (an index mixed up with the label); micro-batch 3 keeps them in range."""

import torch

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "differs from the example collated alone"}


def collate(items):
    batch = stack_collate(items)
    batch["labels"] = torch.arange(len(items))
    return batch


def make_task():
    return classification_task(collate=collate, raw_label=None, class_names=None)


def build_model(task):
    return mlp(task)


SETTINGS = {"micro_batch": 3, "eval_micro_batch": 3}
