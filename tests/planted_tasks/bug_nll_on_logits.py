"""loss_sum uses F.nll_loss on raw logits (log_softmax forgotten): the loss is -logit[target], unbounded
below."""

import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective"]}


def make_task():
    return classification_task(loss_sum=lambda logits, b: F.nll_loss(logits.float(), b["labels"], reduction="sum"))


def build_model(task):
    return mlp(task)
