"""correct: query/passage retrieval with one mined hard negative per query; the score matrix's columns are
[every query's hard negative | every query's positive], so query i's positive is column B + i (1 alone). Inspect
failed it twice: its labels differ from the example collated alone (by design), and its loss depends on its
batch (the other rows' passages are its negatives, by design)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT

EXPECTED = None


def make_task():
    rng = np.random.default_rng(6)
    topics = rng.normal(size=(60, 16)).astype("float32")
    examples = []
    for index in range(240):
        topic, other = int(rng.integers(60)), int(rng.integers(60))
        other = other if other != topic else (topic + 1) % 60
        fields = {
            name: topics[t] + rng.normal(0, 0.3, 16).astype("float32")
            for name, t in (("query", topic), ("positive", topic), ("negative", other))
        }
        examples.append(Example(index=index, group=f"q{index}", fields=fields))

    def encode(example):
        return {"index": example.index, **{k: torch.from_numpy(v) for k, v in example.fields.items()}}

    def collate(items):
        size = len(items)
        passages = [torch.stack([item[name] for item in items]) for name in ("negative", "positive")]
        return {
            "query": torch.stack([item["query"] for item in items]),
            "passages": torch.cat(passages),
            "labels": size + torch.arange(size),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="retrieval",
        splits=make_splits(examples, SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda scores, batch: F.cross_entropy(scores, batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda scores, batch: scores.argmax(-1),
        forward=lambda model, batch: model(batch["query"], batch["passages"]),
    )


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.queries = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
        self.passages = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, query, passages):
        return 5 * F.normalize(self.queries(query), dim=-1) @ F.normalize(self.passages(passages), dim=-1).T


def build_model(task):
    return DualEncoder()
