"""correct: classification with label smoothing 0.1 in loss_sum (reduction='sum'), as many recipes do."""

import torch.nn.functional as F

from tests.planted_tasks._common import EVERY_CHECK, classification_task, mlp

EXPECTED = None
SETTINGS = EVERY_CHECK


def make_task():
    return classification_task(
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], label_smoothing=0.1, reduction="sum")
    )


def build_model(task):
    return mlp(task)
