"""loss_sum divided by the batch size as a constant (BATCH_SIZE = 8, the micro-batch): additive, so
the sum contract holds, but every update and every recorded loss is 8x smaller."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail", "said": "batch.micro_batch"}
SETTINGS = {"micro_batch": 8}
BATCH_SIZE = 8


def make_task():
    return classification_task(
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum") / BATCH_SIZE
    )


def build_model(task):
    return mlp(task)
