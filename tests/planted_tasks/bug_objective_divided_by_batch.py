"""loss_sum divides by a fixed "batch size" constant of 32: still additive, but every gradient 32x too small."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "warn"}
BATCH_SIZE = 32


def make_task():
    return classification_task(
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum") / BATCH_SIZE
    )


def build_model(task):
    return mlp(task)
