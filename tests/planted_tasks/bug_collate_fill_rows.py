"""classification: collate fills every micro-batch up to a fixed 4 rows (static shapes for
torch.compile) with all-zero inputs labelled 0 ('cat'); the filler rows are counted in the loss."""

import torch

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = {"step": "inspect", "verdict": "fail"}
ROWS = 4


def collate(items):
    batch = stack_collate(items)
    missing = ROWS - len(items)
    if missing > 0:
        batch["inputs"] = torch.cat([batch["inputs"], torch.zeros(missing, batch["inputs"].shape[1])])
        batch["labels"] = torch.cat([batch["labels"], torch.zeros(missing, dtype=torch.long)])
    return batch


def make_task():
    return classification_task(collate=collate)


def build_model(task):
    return mlp(task)


SETTINGS = {"micro_batch": 4, "eval_micro_batch": 4}
