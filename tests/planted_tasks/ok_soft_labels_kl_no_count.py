"""correct: soft targets with F.kl_div(log_softmax(logits), target), summed; no correct_count, and predict
gives the predicted distribution (as the labels are): the tiny subset compares their most likely classes."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp
from tests.planted_tasks.ok_soft_labels import collate

EXPECTED = None
SETTINGS = {"tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return classification_task(
        collate=collate,
        target_count=lambda b: torch.tensor(b["labels"].shape[0]),
        loss_sum=lambda logits, b: F.kl_div(logits.float().log_softmax(-1), b["labels"], reduction="sum"),
        predict=lambda logits, b: logits.softmax(-1),
    )


def build_model(task):
    return mlp(task)
