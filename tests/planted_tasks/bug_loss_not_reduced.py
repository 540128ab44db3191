"""loss_sum returns per-example losses (reduction='none'), a vector, not a scalar sum. Expected: a clear
fail naming loss_sum's shape, not a traceback."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "contract", "verdict": "fail"}


def make_task():
    return classification_task(
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="none")
    )


def build_model(task):
    return mlp(task)
