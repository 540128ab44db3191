"""shared: sequence regression on byte tokens: a word -> its share of vowels (a float in [0,1])
a GRU reads the
padded ids (packed by length), one output per example
MSE summed over examples."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words


def collate(items):
    width = max(len(i["ids"]) for i in items)
    ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        ids[r, : len(i["ids"])], mask[r, : len(i["ids"])] = torch.tensor(i["ids"]), 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([i["y"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def task(target_count):
    ex = [
        Example(index=i, group=f"w{i}", fields={"word": w, "y": sum(c in "aeiou" for c in w) / len(w)})
        for i, w in enumerate(words(200, 12))
    ]
    return TaskData(
        kind="regression",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "ids": tok.encode(e.fields["word"]), "y": e.fields["y"]},
        collate=collate,
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"].float(), reduction="sum"),
        target_count=target_count,
        predict=lambda out, b: out,
        correct_count=lambda out, b: ((out - b["labels"]).abs() < 0.05).sum(),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"]),
        info={"target_unit": "example", "pad_id": tok.PAD_ID},
        initial_loss_tolerance=None,
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, ids, mask):
        lengths = mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.head(h[-1]).squeeze(-1)
