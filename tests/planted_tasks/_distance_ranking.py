"""Candidate ranking with a metric-learning head: the model returns the Euclidean distance from the query to
each of 5 candidates, one relevant; the loss is cross-entropy on the negated distances (lower is better)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT, make_splits


def ranking_task(predict) -> TaskData:
    rng = np.random.default_rng(1)
    mixing = rng.normal(0, 1, (8, 8)) / 2
    examples = []
    for index in range(240):
        query, candidates, relevant = rng.normal(0, 1, 8), rng.normal(0, 1, (5, 8)), int(rng.integers(5))
        candidates[relevant] = query @ mixing + rng.normal(0, 0.2, 8)
        fields = {"q": query.astype("float32"), "c": candidates.astype("float32"), "relevant": relevant}
        examples.append(Example(index=index, group=f"q{index}", fields=fields))
    return TaskData(
        kind="ranking",
        splits=make_splits(examples, SPLIT),
        encode=lambda e: {
            "index": e.index,
            "q": torch.from_numpy(e.fields["q"]),
            "c": torch.from_numpy(e.fields["c"]),
            "label": e.fields["relevant"],
        },
        collate=lambda items: {
            "query": torch.stack([i["q"] for i in items]),
            "candidates": torch.stack([i["c"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda distances, b: F.cross_entropy(-distances.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=predict,
        forward=lambda model, b: model(b["query"], b["candidates"]),
        info={"target_unit": "example"},
    )


class DistanceHead(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.query = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, query, candidates):
        return (self.query(query).unsqueeze(1) - candidates).pow(2).sum(-1).add(1e-6).sqrt()
