"""Mixup as training augmentation in `encode` (training examples only): the input becomes
lam * x + (1 - lam) * x_partner with lam ~ Beta(0.4, 0.4), but the label stays the first example's hard
class (the targets were never mixed): about half the mixed inputs mostly show the partner, of another
class, and are trained as the first's."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._common import CLASS_NAMES, vector_examples
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = {"step": "split_audit", "verdict": "warn"}
SOFT = False  # the planted mistake; ok_mixup_soft_labels mixes the targets with the same weight


def task(soft: bool):
    rows = [
        Example(index=e.index, group=e.group, fields={"x": e.fields["x"], "y": CLASS_NAMES.index(e.fields["animal"])})
        for e in vector_examples(count=210, seed=3)
    ]
    held = {}

    def encode(e):
        x, target = np.asarray(e.fields["x"], dtype="float32"), np.eye(len(CLASS_NAMES), dtype="float32")[e.fields["y"]]
        if e.index in held["train"]:
            rng = np.random.default_rng(e.index)
            lam, partner = rng.beta(0.4, 0.4), held["rows"][int(rng.integers(len(held["rows"])))]
            x = lam * x + (1 - lam) * np.asarray(partner.fields["x"], dtype="float32")
            target = lam * target + (1 - lam) * np.eye(len(CLASS_NAMES), dtype="float32")[partner.fields["y"]]
        label = torch.tensor(target) if soft else torch.tensor(e.fields["y"])
        return {"index": e.index, "inputs": torch.tensor(x, dtype=torch.float32), "label": label}

    built, held["train"] = image_task(rows, len(CLASS_NAMES), CLASS_NAMES, encode=encode, field="x")
    held["rows"] = built.splits["train"]
    if soft:  # soft targets: cross-entropy against the mixed distribution; accuracy against its top class
        built.loss_sum = lambda out, b: -(b["labels"] * F.log_softmax(out.float(), -1)).sum()
        built.target_count = lambda b: torch.tensor(b["labels"].shape[0])  # one target per example
        built.predict = lambda out, b: out.argmax(-1)
        built.correct_count = lambda out, b: (out.argmax(-1) == b["labels"].argmax(-1)).sum()
    return built


def make_task():
    return task(SOFT)


def build_model(task):
    return mlp(8, len(CLASS_NAMES))
