"""classification whose loss_sum calls cross_entropy(..., ignore_index=0), copied from a language model's loss where
0 was the pad id: class 0 is a real class here, and none of its examples is ever trained (an outside examination,
2026-12-06, whose count mismatch was caught without the class named)."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail", "said": "ignore_index=0"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return classification_task(
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], ignore_index=0, reduction="sum")
    )


def build_model(task):
    return mlp(task)
