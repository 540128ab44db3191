"""correct: multi-label topics of short texts (each text 1-3 topics, multi-hot float labels of 4 columns) read
by a bag-of-words model from padded token ids with an attention mask: the inspection read the label row as
positions of the input ("counted position(s) 5 predict a padding token") and failed it."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

TOPICS = ["sports", "politics", "science", "arts"]
WORDS = {t: [f"{t}{k}" for k in range(20)] for t in TOPICS}
VOCAB = {w: i + 1 for i, w in enumerate(w for t in TOPICS for w in WORDS[t])}  # 0: padding


def examples(count=240, seed=4):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        tags = sorted(rng.choice(len(TOPICS), size=int(rng.integers(1, 4)), replace=False).tolist())
        words = [str(rng.choice(WORDS[TOPICS[t]])) for t in tags for _ in range(int(rng.integers(2, 5)))]
        out.append(Example(i, f"d{i}", {"text": " ".join(rng.permutation(words)), "tags": [TOPICS[t] for t in tags]}))
    return out


def encode(e):
    target = torch.zeros(len(TOPICS))
    target[[TOPICS.index(t) for t in e.fields["tags"]]] = 1.0
    return {"index": e.index, "ids": [VOCAB[w] for w in e.fields["text"].split()], "y": target}


def collate(items):
    width = max(len(i["ids"]) for i in items)
    ids = torch.tensor([i["ids"] + [0] * (width - len(i["ids"])) for i in items])
    return {
        "input_ids": ids,
        "attention_mask": (ids != 0).long(),
        "labels": torch.stack([i["y"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return TaskData(
        kind="multilabel",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.binary_cross_entropy_with_logits(out, b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out > 0).float(),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"]),
        info={"target_unit": "tag", "pad_id": 0},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.out = nn.Embedding(len(VOCAB) + 1, 16), nn.Linear(16, len(TOPICS))

    def forward(self, ids, mask):
        mask = mask.unsqueeze(-1).float()
        return self.out((self.embed(ids) * mask).sum(1) / mask.sum(1).clamp(min=1))


EXPECTED = None


def build_model(task):
    return Model()
