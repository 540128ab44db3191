"""classification: collate adds Gaussian noise augmentation to every batch, validation included: the
validation metric is random (differs between evaluations of the same model)."""

import torch

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = {"step": "eval_determinism", "verdict": "warn", "said": "collate draws random inputs"}


def collate(items):
    batch = stack_collate(items)
    batch["inputs"] = batch["inputs"] + 0.3 * torch.randn_like(batch["inputs"])  # the bug: also in eval
    return batch


def make_task():
    return classification_task(collate=collate)


def build_model(task):
    return mlp(task)
