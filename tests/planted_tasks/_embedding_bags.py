"""shared: sentiment of short reviews as nn.EmbeddingBag reads them (PyTorch's text classification tutorial):
collate concatenates every review's word ids into one flat tensor and gives each review's start in it as
`offsets` (the exclusive running sum of the lengths). `task(offsets)` computes them right or with the
running sum shifted by one review."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks import _word_bags as words
from tests.planted_tasks._word_bags import VOCAB, WIDTH


def task(offsets: str = "exclusive"):
    """``offsets``: "exclusive" ([0, len0, len0+len1, ...]) or "skips_first" ([0] + cumsum(lengths[1:]))."""
    base = words.make_task()

    def collate(items):
        lengths = [len(i["ids"]) for i in items]
        kept = lengths[:-1] if offsets == "exclusive" else lengths[1:]
        return {
            "flat_ids": torch.tensor([t for i in items for t in i["ids"]]),
            "offsets": torch.tensor([0, *np.cumsum(kept).tolist()][: len(items)], dtype=torch.long),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    base.collate = collate
    base.forward = lambda m, b: m(b["flat_ids"], b["offsets"])
    base.loss_sum = lambda out, b: F.cross_entropy(out, b["labels"], reduction="sum")
    base.info = {}
    return base


class BagNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.bag = nn.EmbeddingBag(len(VOCAB), WIDTH, mode="mean")
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, flat_ids, offsets):
        return self.head(self.bag(flat_ids, offsets))
