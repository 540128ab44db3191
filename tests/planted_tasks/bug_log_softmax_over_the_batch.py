"""classification whose loss_sum is nll_loss(log_softmax(logits, dim=0)): the softmax runs over the examples of the
batch, not the classes, so an example alone always scores 0 (an outside examination, 2026-12-06, whose catch said
only "= inf x the sum of their single losses")."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail", "said": "normalises over the batch axis"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return classification_task(
        loss_sum=lambda logits, b: F.nll_loss(F.log_softmax(logits.float(), dim=0), b["labels"], reduction="sum")
    )


def build_model(task):
    return mlp(task)
