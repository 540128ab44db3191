"""shared: a topic classifier over a word index (ids by frequency, as Keras' ``fit_on_texts`` numbers them) and a
bag of embeddings. ``PER_SPLIT``: the index fitted on each split's own rows (the mistake), else on training's."""

from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

TOPICS = {
    "sport": "match goal team coach player league score season win",
    "food": "bread soup salad cheese recipe oven spice dinner taste",
    "travel": "train hotel ticket beach city flight map museum trip",
}
FILLER = "the a of and to in with for on".split()
NAMES = list(TOPICS)


def _index(texts: list[str]) -> dict[str, int]:
    counts = Counter(word for text in texts for word in text.split())
    return {word: i + 2 for i, word in enumerate(sorted(counts, key=lambda w: (-counts[w], w)))}  # 0 pad, 1 unknown


def make_task(per_split: bool) -> TaskData:
    rng = np.random.default_rng(8)
    rows = []
    for i in range(400):
        topic = NAMES[int(rng.integers(3))]
        words = list(rng.choice(TOPICS[topic].split(), 4)) + list(rng.choice(FILLER, 4))
        rng.shuffle(words)
        rows.append(Example(index=i, group=f"d{i}", fields={"text": " ".join(words), "topic": topic}))
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    indexes = {name: _index([e.fields["text"] for e in examples]) for name, examples in splits.items() if examples}
    train = indexes["train"]
    words = {i: w for w, i in train.items()}
    split_of = {e.index: name for name, examples in splits.items() for e in examples}

    def encode(e):
        index = indexes[split_of[e.index]] if per_split else train
        return {
            "index": e.index,
            "ids": [index.get(w, 1) for w in e.fields["text"].split()],
            "y": NAMES.index(e.fields["topic"]),
        }

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
        splits=splits,
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out, b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda model, b: model(b["input_ids"], b["attention_mask"]),
        decode_tokens=lambda ids: [words.get(int(i), "[UNK]" if int(i) == 1 else "[PAD]") for i in ids],
        class_names=list(NAMES),
        raw_label=lambda e: e.fields["topic"],
        info={"num_classes": 3, "pad_id": 0, "padding_side": "right", "target_unit": "example"},
    )


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(64, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, input_ids, attention_mask):
        mask = attention_mask.unsqueeze(-1).float()
        return self.head((self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1))
