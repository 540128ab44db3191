"""shared: sentiment of short reviews as a bag of word embeddings (mean over the real words, then a linear
head), the embedding built with nn.Embedding.from_pretrained as in a GloVe notebook. `Model(table, freeze)`
takes the matrix it starts from and whether from_pretrained freezes it."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

POSITIVE = "great good lovely fine superb".split()
NEGATIVE = "bad awful poor dull bland".split()
NEUTRAL = "the a movie film plot was it is".split()
VOCAB = ["<pad>", *sorted(set(POSITIVE + NEGATIVE + NEUTRAL))]
WIDTH = 16
SETTINGS = {"checks": ["objective", "tiny_subset"], "tiny_overrides": ["optim.lr=1e-2"]}  # a model from scratch


def make_task():
    rng = np.random.default_rng(4)
    examples, seen = [], set()
    while len(examples) < 200:
        label = int(rng.integers(2))
        words = list(rng.choice(NEUTRAL, int(rng.integers(4, 10))))
        words[int(rng.integers(len(words)))] = str(rng.choice(POSITIVE if label else NEGATIVE))
        text = " ".join(words)
        if text not in seen:
            seen.add(text)
            fields = {"text": text, "label": ["neg", "pos"][label]}
            examples.append(Example(index=len(examples), group=f"r{len(examples)}", fields=fields))

    def collate(items):
        width = max(len(i["ids"]) for i in items)
        ids = torch.tensor([i["ids"] + [0] * (width - len(i["ids"])) for i in items])
        return {
            "input_ids": ids,
            "attention_mask": (ids != 0).long(),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "ids": [VOCAB.index(w) for w in e.fields["text"].split()],
            "y": ["neg", "pos"].index(e.fields["label"]),
        },
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out, b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"]),
        class_names=["neg", "pos"],
        raw_label=lambda e: e.fields["label"],
        info={"pad_id": 0},
    )


def random_table():
    """A random init, as a notebook starts before loading vectors."""
    return torch.randn(len(VOCAB), WIDTH, generator=torch.Generator().manual_seed(1)) * 0.1


def trained_table():
    """Vectors that carry the words' sentiment on their first coordinates, as trained word vectors do."""
    table = random_table()
    for word in POSITIVE + NEGATIVE:
        table[VOCAB.index(word), :4] = 8.0 if word in POSITIVE else -8.0
    return table


class Model(nn.Module):
    def __init__(self, table, freeze=True):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(table, freeze=freeze, padding_idx=0)
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, input_ids, attention_mask):
        kept = attention_mask.unsqueeze(-1)
        return self.head((self.emb(input_ids) * kept).sum(1) / kept.sum(1))
