"""loss_sum "averages" by the batch size written as a constant (MICRO_BATCH = 8, the configured
micro-batch): additive, so the sum contract holds, but every update and every recorded loss is 8x
smaller."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail", "said": "batch.micro_batch"}
SETTINGS = {"micro_batch": 8}
MICRO_BATCH = 8


def loss_sum(logits, batch):
    picked = F.log_softmax(logits.float(), dim=-1).gather(1, batch["labels"][:, None])
    return -picked.sum() / MICRO_BATCH


def make_task():
    return classification_task(loss_sum=loss_sum)


def build_model(task):
    return mlp(task)
