"""correct: listwise (ListNet) ranking of 5 candidates by graded relevance; predict returns the scores
themselves and correct_count says whether the top-scored candidate is the best one (accuracy reads it):
the objective failed it, "predict reads what the loss never trains", for scores that moved with a shift."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT

EXPECTED = None


def make_task():
    rng = np.random.default_rng(34)
    weights, examples = rng.normal(size=6), []
    for index in range(240):
        candidates = rng.normal(size=(5, 6)).astype("float32")
        rank = np.argsort(np.argsort(-(candidates @ weights)))  # each candidate's rank, 0 = best
        grades = (4 - rank).astype("float32")
        examples.append(Example(index=index, group=f"q{index}", fields={"candidates": candidates, "grades": grades}))

    def encode(example):
        fields = example.fields
        return {"index": example.index, "candidates": torch.from_numpy(fields["candidates"]), "grades": torch.from_numpy(fields["grades"])}  # fmt: skip

    def collate(items):
        return {
            "candidates": torch.stack([item["candidates"] for item in items]),
            "labels": torch.stack([item["grades"] for item in items]),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="ranking",
        splits=make_splits(examples, SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda scores, batch: -(F.softmax(batch["labels"], -1) * F.log_softmax(scores, -1)).sum(),
        target_count=lambda batch: torch.tensor(batch["labels"].shape[0]),
        predict=lambda scores, batch: scores,
        forward=lambda model, batch: model(batch["candidates"]),
        correct_count=lambda scores, batch: (scores.argmax(-1) == batch["labels"].argmax(-1)).sum(),
    )


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, candidates):
        return self.net(candidates).squeeze(-1)


def build_model(task):
    return Scorer()
