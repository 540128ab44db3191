"""shared: does 'a' occur more often than 'b' in a string of a-d? A GRU reads each row packed
(``pack_padded_sequence``, the rows sorted by length as ``enforce_sorted=True`` wants) and classifies from
its last hidden state; ``RESTORE``: whether forward puts the outputs back in the batch's order."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

NAMES = ["not_more_a", "more_a"]


def examples() -> list[Example]:
    rng = np.random.default_rng(3)
    texts = ["".join(rng.choice(list("abcd"), size=int(rng.integers(4, 24)))) for _ in range(300)]
    return [
        Example(index=i, group=f"t{i}", fields={"text": s, "name": NAMES[int(s.count("a") > s.count("b"))]})
        for i, s in enumerate(texts)
    ]


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, : len(item["input_ids"])] = item["input_ids"]
        mask[row, : len(item["input_ids"])] = 1
    labels = torch.tensor([item["label"] for item in items])
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": labels,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task() -> TaskData:
    def encode(e):
        return {
            "index": e.index,
            "input_ids": torch.tensor(tok.encode(e.fields["text"])),
            "label": NAMES.index(e.fields["name"]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda model, b: model(b["input_ids"], b["attention_mask"]),
        decode_tokens=tok.token_strings,
        class_names=list(NAMES),
        raw_label=lambda e: e.fields["name"],
        info={"num_classes": 2, "pad_id": tok.PAD_ID, "target_unit": "example"},
    )


class SortedGRU(nn.Module):
    def __init__(self, restore: bool):
        super().__init__()
        torch.manual_seed(0)
        self.restore = restore
        self.embed = nn.Embedding(tok.VOCAB_SIZE, 32, padding_idx=tok.PAD_ID)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, 2)

    def forward(self, input_ids, attention_mask):
        lengths, order = attention_mask.sum(1).sort(descending=True)  # pack wants them sorted
        packed = pack_padded_sequence(self.embed(input_ids[order]), lengths.cpu(), batch_first=True)
        _, hidden = self.gru(packed)
        out = self.head(hidden[-1])
        return out[order.argsort()] if self.restore else out
