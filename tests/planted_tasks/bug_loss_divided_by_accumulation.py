"""loss_sum divided by the accumulation steps by hand (a habit from manual loops): half the sum."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail", "said": "batch.accumulation"}
SETTINGS = {"micro_batch": 4, "accumulation": 2}


def make_task():
    return classification_task(
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum") / 2
    )


def build_model(task):
    return mlp(task)
