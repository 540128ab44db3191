"""loss_sum maps class ids through an alphabetical table while the head follows class_names' order."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp

EXPECTED = {"step": "alignment", "verdict": "fail"}
HEAD_ORDER = sorted(CLASS_NAMES)  # ["bird", "cat", "dog"]
REMAP = torch.tensor([HEAD_ORDER.index(name) for name in CLASS_NAMES])


def loss_sum(logits, batch):
    return F.cross_entropy(logits.float(), REMAP[batch["labels"]], reduction="sum")  # the bug


def make_task():
    return classification_task(loss_sum=loss_sum)


def build_model(task):
    return mlp(task)
