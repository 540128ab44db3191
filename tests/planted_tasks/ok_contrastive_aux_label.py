"""correct: dual encoder with in-batch negatives (labels = arange(B)) PLUS a second per-example label
(topic id, 3 classes) for an auxiliary classification head on the query; loss = CE(sim, arange) + CE(topic)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._bert_bpe import pad2
from tests.planted_tasks._common import words

EXPECTED = None


def collate(items):
    q, d = pad2([i["q"] for i in items], tok.PAD_ID), pad2([i["d"] for i in items], tok.PAD_ID)
    return {
        "input_ids": q,
        "attention_mask": (q != tok.PAD_ID).long(),
        "doc_ids": d,
        "doc_mask": (d != tok.PAD_ID).long(),
        "labels": torch.arange(len(items)),
        "topic": torch.tensor([i["topic"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


class DualEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.proj = nn.Linear(width, width)
        self.topic = nn.Linear(width, 3)

    def pool(self, ids, mask):
        m = mask.unsqueeze(-1).float()
        return (self.embed(ids) * m).sum(1) / m.sum(1).clamp(min=1)

    def forward(self, q, qm, d, dm):
        hq = self.pool(q, qm)
        zq, zd = F.normalize(self.proj(hq), dim=-1), F.normalize(self.proj(self.pool(d, dm)), dim=-1)
        return zq @ zd.T / 0.1, self.topic(hq)


def loss_sum(out, b):
    sim, topic = out
    return F.cross_entropy(sim.float(), b["labels"], reduction="sum") + F.cross_entropy(
        topic.float(), b["topic"], reduction="sum"
    )


def make_task():
    ex = [
        Example(index=i, group=f"w{i}", fields={"query": w, "doc": w[::-1], "topic": len(w) % 3})
        for i, w in enumerate(words(120, 8))
    ]
    return TaskData(
        kind="retrieval",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "q": tok.encode(e.fields["query"]),
            "d": tok.encode(e.fields["doc"]),
            "topic": e.fields["topic"],
        },
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out[0].argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["doc_ids"], b["doc_mask"]),
        info={"target_unit": "example", "pad_id": tok.PAD_ID},
        initial_loss_tolerance=None,
    )


def build_model(task):
    return DualEncoder()
