"""shared: 3-class blobs with per-example reliability weights (annotator agreement 0.2-1.0) held in a global
table by example index; loss = sum(w_i * CE_i), target_count = sum(w_i)."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._small_tasks import blobs, cls_task

NAMES = ("low", "mid", "high")


def sw_task(by_index):
    ex = blobs(240, NAMES, seed=6)
    rng = np.random.default_rng(1)
    weight = torch.tensor(rng.choice([0.2, 0.5, 1.0], size=len(ex)), dtype=torch.float32)

    def w_of(b):
        return weight[b["index"]] if by_index else weight[: len(b["labels"])]  # bug: by batch position

    def loss(logits, b):
        return (F.cross_entropy(logits.float(), b["labels"], reduction="none") * w_of(b)).sum()

    return cls_task(ex, NAMES, loss_sum=loss, target_count=lambda b: w_of(b).sum())
