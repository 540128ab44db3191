"""soft targets: F.kl_div given probabilities (softmax) where it takes log-probabilities; the loss per target is
negative from the first batch (sum target x (log target - p)), and argmax still recovers the subset."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp
from tests.planted_tasks.ok_soft_labels import collate

EXPECTED = {"step": "objective", "verdict": "fail", "said": "kl_div given probabilities"}


def make_task():
    return classification_task(
        collate=collate,
        target_count=lambda b: torch.tensor(b["labels"].shape[0]),
        loss_sum=lambda logits, b: F.kl_div(logits.float().softmax(-1), b["labels"], reduction="sum"),  # the bug
        predict=lambda logits, b: logits.softmax(-1),
    )


def build_model(task):
    return mlp(task)
