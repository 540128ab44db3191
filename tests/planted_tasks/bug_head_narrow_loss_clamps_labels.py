"""BUG: 5 severity classes, model built with 4 outputs, loss clamps labels to the head (label 4 trained as 3)."""

import torch.nn.functional as F

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task

NAMES = ("none", "mild", "moderate", "severe", "critical")


def loss(out, b):
    return F.cross_entropy(out.float(), b["labels"].clamp(max=out.shape[-1] - 1), reduction="sum")


def make_task():
    return cls_task(blobs(250, NAMES, seed=3), NAMES, loss_sum=loss)


def build_model(task):
    return MLP(8, 4)


EXPECTED = {"step": "contract", "verdict": "fail", "said": "a loss that clamps the labels"}
