"""Shared by bug_mc_answer_always_first and ok_mc_shuffled (an outside examination, 2026-12-04): 'which of the 4 numbers is the largest?'
The 4 candidates are concatenated into one input (like a `[Q] A [SEP] B [SEP] C [SEP] D` encoder with a
4-way head); an MLP reads the 4 values (with a small per-candidate feature set) and gives 4 logits."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

LETTERS = ["A", "B", "C", "D"]


def records(n=240, seed=9):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        vals = rng.choice(np.arange(10, 100), size=4, replace=False)
        correct = int(vals.max())
        distractors = [int(v) for v in vals if v != correct]
        out.append({"id": i, "correct": correct, "distractors": distractors})
    return out


def task(shuffle_train: bool, split=None):
    recs = records()
    ex = [Example(index=r["id"], group=f"q{r['id']}", fields=dict(r)) for r in recs]
    splits = make_splits(ex, split or {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    # val/test come from the benchmark with their order already shuffled; train is built here
    for name, part in splits.items():
        for e in part:
            options = [e.fields["correct"], *e.fields["distractors"]]
            if name != "train" or shuffle_train:
                np.random.default_rng(1000 + e.index).shuffle(options)
            e.fields["options"] = options
            e.fields["answer"] = LETTERS[options.index(e.fields["correct"])]

    def encode(e):
        return {
            "index": e.index,
            "inputs": torch.tensor([v / 100.0 for v in e.fields["options"]], dtype=torch.float32),
            "label": LETTERS.index(e.fields["answer"]),
        }

    return TaskData(
        kind="multiple_choice",
        splits=splits,
        encode=encode,
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        info={"num_classes": 4, "target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, inputs):
        return self.net(inputs)
