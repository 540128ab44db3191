"""loss_sum uses reduction="mean" (the PyTorch default): the engine's normalisation is applied twice."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail"}


def make_task():
    return classification_task(loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"]))


def build_model(task):
    return mlp(task)
