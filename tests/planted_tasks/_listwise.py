"""shared: answer selection: each query has 3-6 candidate vectors (8 features), one of them correct (the one
closest to the query's hidden direction)
candidates are padded to the batch's widest with zero vectors and a
`cand_mask`; the scorer gives one score per candidate [B, C]; label = the correct candidate's column."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData


def examples(n=240, seed=3):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=8)
    out = []
    for i in range(n):
        k = int(rng.integers(3, 7))
        x = rng.normal(size=(k, 8)).astype("float32")
        out.append(Example(index=i, group=f"q{i}", fields={"cands": x, "answer": int(np.argmax(x @ w))}))
    return out


def collate(items):
    width = max(len(i["cands"]) for i in items)
    x = torch.zeros(len(items), width, 8)
    m = torch.zeros(len(items), width, dtype=torch.bool)
    for r, i in enumerate(items):
        x[r, : len(i["cands"])] = i["cands"]
        m[r, : len(i["cands"])] = True
    return {
        "inputs": x,
        "cand_mask": m,
        "labels": torch.tensor([i["y"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def task(mask_padding):
    def scores_of(out, b):
        return out.float().masked_fill(~b["cand_mask"], -1e4) if mask_padding else out.float()

    return TaskData(
        kind="answer_selection",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "cands": torch.from_numpy(e.fields["cands"]), "y": e.fields["answer"]},
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(scores_of(out, b), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: scores_of(out, b).argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "query"},
        initial_loss_tolerance=None,
    )


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)
