"""correct: positive-unlabelled learning with the unbiased PU risk and the sigmoid loss (labels: 1 labelled
positive, 0 unlabelled; class prior 0.4): bounded, and it can go below 0 once the subset is learnt. An
examination's false alarm of the tiny subset's below-zero failure (2026-12-06), kept as a guard."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import EVERY_CHECK, precomputed_classification
from tests.planted_tasks._exam107 import mlp

EXPECTED = None
SETTINGS = EVERY_CHECK
PRIOR, NAMES = 0.4, ["unlabelled", "positive"]
__all__ = ["EXPECTED", "SETTINGS", "build_model", "make_task"]


def make_task():
    rng = np.random.default_rng(51)
    rows = []
    for i in range(300):
        positive = rng.random() < PRIOR
        x = rng.normal(1.2 if positive else -1.2, 1.0, 4).astype("float32")
        fields = {"x": x, "s": NAMES[int(positive and rng.random() < 0.5)]}
        rows.append(Example(index=i, group=f"q{i}", fields=fields))
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    n = len(splits["train"])
    labelled = sum(e.fields["s"] == "positive" for e in splits["train"])

    def risk(out, b):  # per example, so that the sum over training is n x the uPU risk
        f, s = out.squeeze(-1).float(), b["labels"].float()
        positive_part = s * (n / labelled) * PRIOR * (torch.sigmoid(-f) - torch.sigmoid(f))
        return (positive_part + (1 - s) * (n / (n - labelled)) * torch.sigmoid(f)).sum()

    inputs = {e.index: e.fields["x"] for e in rows}
    return precomputed_classification(splits, inputs, lambda e: e.fields["s"], NAMES, loss=risk)


def build_model(task):
    return mlp(4, 1)
