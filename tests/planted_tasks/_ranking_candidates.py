"""shared: next-item recommendation over a 12-item catalogue: a user vector, 5 shuffled candidate item ids
(1 positive + 4 sampled negatives); the label is the positive's slot. Model: dot(user proj, item embedding)."""

import numpy as np
import torch
import torch.nn as nn

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import cls_task

ITEMS, K, D = 12, 5, 6


def make_rank_task(exclude_positive, count=240, seed=2):
    rng = np.random.default_rng(seed)
    item_vec = rng.normal(0, 1, size=(ITEMS, D))
    ex = []
    for i in range(count):
        pos = int(rng.integers(0, ITEMS))
        user = (item_vec[pos] + rng.normal(0, 0.7, size=D)).astype("float32")
        pool = [j for j in range(ITEMS) if j != pos] if exclude_positive else list(range(ITEMS))
        negs = [int(j) for j in rng.choice(pool, size=K - 1, replace=False)]
        cands = [pos] + negs
        order = rng.permutation(K)
        cands = [cands[o] for o in order]
        slot = cands.index(pos)
        ex.append(
            Example(
                index=i, group=f"u{i}", fields={"x": user, "b_cands": np.array(cands), "y": slot, "name": f"slot{slot}"}
            )
        )
    task = cls_task(ex, [f"slot{k}" for k in range(K)], forward=lambda m, b: m(b["inputs"], b["cands"]))
    return task


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.user = nn.Linear(D, 16)
        self.item = nn.Embedding(ITEMS, 16)

    def forward(self, user, cands):
        return torch.einsum("bd,bkd->bk", self.user(user), self.item(cands))
