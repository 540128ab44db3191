"""BUG: per-example weights uniform in [0.5, 1.5] (mean 1): target_count = sum(w) but loss_sum forgets the weights (sum of plain CE):
the normalised loss is inflated by 1/mean(w) and the weights do nothing."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task

NAMES = ("low", "mid", "high")


def make_task():
    ex = blobs(240, NAMES, seed=6)
    rng = np.random.default_rng(1)
    weight = torch.tensor(rng.uniform(0.5, 1.5, size=len(ex)), dtype=torch.float32)
    return cls_task(
        ex,
        NAMES,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),  # BUG: no weights
        target_count=lambda b: weight[b["index"]].sum(),
    )


def build_model(task):
    return MLP(8, 3)


EXPECTED = {"step": "objective", "verdict": "fail", "said": "that loss_sum does not apply"}
