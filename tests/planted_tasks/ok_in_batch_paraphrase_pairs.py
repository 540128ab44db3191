"""correct: in-batch InfoNCE over (query, paraphrase) pairs with one shared encoder and temperature 0.05; a
paraphrase is its query slightly perturbed, so even a fresh encoder scores each positive well and the loss
starts far below ln(batch): the objective warned "expected near ln(4)" (an outside examination's SimCSE-style
task), though an in-batch row's classes are the batch's own examples."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT

EXPECTED = None


def make_task():
    rng = np.random.default_rng(12)
    examples = []
    for index in range(240):
        query = rng.normal(size=16).astype("float32")
        paraphrase = (query + rng.normal(0, 0.1, 16)).astype("float32")
        examples.append(Example(index=index, group=f"q{index}", fields={"query": query, "paraphrase": paraphrase}))

    def collate(items):
        return {
            "query": torch.stack([item["query"] for item in items]),
            "paraphrase": torch.stack([item["paraphrase"] for item in items]),
            "labels": torch.arange(len(items)),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="retrieval",
        splits=make_splits(examples, SPLIT),
        encode=lambda e: {"index": e.index, **{k: torch.from_numpy(v) for k, v in e.fields.items()}},
        collate=collate,
        loss_sum=lambda scores, batch: F.cross_entropy(scores, batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda scores, batch: scores.argmax(-1),
        forward=lambda model, batch: model(batch["query"], batch["paraphrase"]),
    )


class SharedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, query, paraphrase):
        queries, paraphrases = (F.normalize(self.encoder(x), dim=-1) for x in (query, paraphrase))
        return queries @ paraphrases.T / 0.05


def build_model(task):
    return SharedEncoder()
