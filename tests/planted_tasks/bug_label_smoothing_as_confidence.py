"""classification: cross_entropy(..., label_smoothing=0.9), meant as "90% confident in the label": 90% of
each target's probability is spread over every class, so the best any output can do is nearly a uniform
guess and training barely moves the loss; every check passed it (an outside examination)."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "warn", "said": "label_smoothing"}


def make_task():
    return classification_task(
        loss_sum=lambda logits, batch: F.cross_entropy(logits, batch["labels"], reduction="sum", label_smoothing=0.9)
    )


build_model = mlp
