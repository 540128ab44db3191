"""shared: dual encoder, in-batch negatives
query = a word, document = the word reversed plus a suffix."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words


def pad(seqs):
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)], mask[r, : len(s)] = torch.tensor(s), 1
    return ids, mask


def collate_sorted_queries(items):
    # "sort queries by length so the query encoder pads less" -- documents left in the original order
    qs = sorted([i["q"] for i in items], key=len, reverse=True)
    q, qm = pad(qs)
    d, dm = pad([i["d"] for i in items])
    return {
        "input_ids": q,
        "attention_mask": qm,
        "doc_ids": d,
        "doc_mask": dm,
        "labels": torch.arange(len(items)),
        "index": torch.tensor([i["index"] for i in items]),
    }


def collate_sorted_pairs(items):
    items = sorted(items, key=lambda i: len(i["q"]), reverse=True)
    q, qm = pad([i["q"] for i in items])
    d, dm = pad([i["d"] for i in items])
    return {
        "input_ids": q,
        "attention_mask": qm,
        "doc_ids": d,
        "doc_mask": dm,
        "labels": torch.arange(len(items)),
        "index": torch.tensor([i["index"] for i in items]),
    }


class DualEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.proj = nn.Linear(width, width)

    def encode(self, ids, mask):
        m = mask.unsqueeze(-1).float()
        return F.normalize(self.proj((self.embed(ids) * m).sum(1) / m.sum(1).clamp(min=1)), dim=-1)

    def forward(self, q, qm, d, dm):
        return self.encode(q, qm) @ self.encode(d, dm).T / 0.1


def task(collate):
    ex = [
        Example(index=i, group=f"w{i}", fields={"query": w, "doc": w[::-1] + " ok"})
        for i, w in enumerate(words(160, 3))
    ]
    return TaskData(
        kind="retrieval",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "q": tok.encode(e.fields["query"]), "d": tok.encode(e.fields["doc"])},
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["doc_ids"], b["doc_mask"]),
        info={"target_unit": "example", "pad_id": tok.PAD_ID},
        initial_loss_tolerance=None,
    )
