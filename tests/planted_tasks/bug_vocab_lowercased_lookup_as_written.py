"""bug: travel requests routed to a regional desk by their destination city; the word vocabulary is built from
the lower-cased corpus but encode looks words up as written, so every capitalised word — the city, the only
evidence of the desk — becomes <unk>. Many requests then look alike to the model across splits; the split
audit said "drop the copies" (an outside examination), and now says encode loses what tells them apart."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import SPLIT

EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "encode gives the same inputs: it loses what tells"}
REGIONS = {
    "europe": ["Lisbon", "Paris", "Berlin", "Rome", "Vienna", "Oslo"],
    "asia": ["Tokyo", "Seoul", "Delhi", "Bangkok", "Hanoi", "Osaka"],
    "americas": ["Lima", "Toronto", "Boston", "Denver", "Bogota", "Quito"],
}
NAMES = list(REGIONS)
TEMPLATES = [
    "please book me a flight to {c} on {d}",
    "i need a hotel in {c} for {d}",
    "find flights to {c} leaving {d}",
]
DAYS = ["monday", "friday", "sunday", "tomorrow", "tonight"]


def make_task():
    rng = np.random.default_rng(41)
    examples, seen = [], set()
    while len(examples) < 240:
        desk = NAMES[int(rng.integers(3))]
        text = str(rng.choice(TEMPLATES)).format(c=str(rng.choice(REGIONS[desk])), d=str(rng.choice(DAYS)))
        if text not in seen:
            seen.add(text)
            examples.append(
                Example(index=len(examples), group=f"r{len(examples)}", fields={"text": text, "desk": desk})
            )
    splits = make_splits(examples, SPLIT)
    vocab = ["<pad>", "<unk>", *sorted({w.lower() for e in splits["train"] for w in e.fields["text"].split()})]
    ids = {w: i for i, w in enumerate(vocab)}

    def collate(items):
        width = max(len(i["ids"]) for i in items)
        return {
            "input_ids": torch.tensor([i["ids"] + [0] * (width - len(i["ids"])) for i in items]),
            "attention_mask": torch.tensor([[1] * len(i["ids"]) + [0] * (width - len(i["ids"])) for i in items]),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {
            "index": e.index,
            "ids": [ids.get(w, 1) for w in e.fields["text"].split()],  # the bug: looked up as written
            "y": NAMES.index(e.fields["desk"]),
        },
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"]),
        class_names=NAMES,
        raw_label=lambda e: e.fields["desk"],
        info={"target_unit": "example", "num_classes": 3, "pad_id": 0, "vocab_size": len(vocab)},
    )


class BagOfWords(nn.Module):
    def __init__(self, vocab: int = 64):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.head = nn.Embedding(vocab, 16), nn.Linear(16, 3)

    def forward(self, ids, mask):
        summed = (self.embed(ids) * mask.unsqueeze(-1)).sum(1)
        return self.head(summed / mask.sum(1, keepdim=True))


def build_model(task):
    return BagOfWords()
