"""correct: listwise ranking, 5 candidates per query, integer relevance grades 0..3 as labels [B, 5], a
ListNet loss (cross-entropy between softmax(scores) and softmax(grades)) summed over queries, target_count =
queries. Its objective check counted each candidate as a target ("target_count says 4 targets but loss_sum
trains 20 positions"; an outside examination, 2026-12-05)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None


def make_task() -> TaskData:
    rng = np.random.default_rng(12)
    weights = rng.normal(size=6)
    examples = []
    for i in range(240):
        x = rng.normal(size=(5, 6)).astype("float32")
        grades = np.searchsorted(np.quantile(x @ weights, [0.4, 0.7, 0.9]), x @ weights).astype("int64")
        examples.append(Example(index=i, group=f"q{i}", fields={"x": x, "grades": grades}))

    def loss_sum(scores, b):
        return -(F.softmax(b["labels"].float(), dim=-1) * F.log_softmax(scores.float(), dim=-1)).sum()

    def correct_count(scores, b):
        top = scores.argmax(-1)
        return (b["labels"].gather(1, top[:, None]).squeeze(1) == b["labels"].max(-1).values).sum()

    return TaskData(
        kind="ranking",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "y": torch.from_numpy(e.fields["grades"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([it["inputs"] for it in items]),
            "labels": torch.stack([it["y"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].shape[0]),
        predict=lambda scores, b: scores.argsort(-1, descending=True).argsort(-1),
        correct_count=correct_count,
        forward=lambda model, b: model(b["inputs"]),
        info={"target_unit": "query"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs).squeeze(-1)
