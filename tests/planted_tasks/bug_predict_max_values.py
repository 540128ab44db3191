"""classification whose predict is torch.max(logits, 1)[0], the largest score, where [1], its class id, was
meant: every prediction is a fraction beside integer labels, so validation accuracy reads 0 whatever the model
learns (an outside examination, 2026-12-07: the checks failed it naming a threshold and swapped arguments)."""

import torch

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "contract", "verdict": "fail", "said": "torch.max(logits, dim) returns (values, indices)"}


def make_task():
    return classification_task(predict=lambda logits, batch: torch.max(logits, 1)[0])


def build_model(task):
    return mlp(task)
