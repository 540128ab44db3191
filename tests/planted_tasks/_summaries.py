"""shared: 'summarise' = keep every other word of a 6-12-word source (T5 built from a config, own loss x counted
tokens); targets capped at MAX_TARGET=16 tokens by the user's target encoder (also used as expected_targets)."""

import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2, sentences

MAX_TARGET = 16


def examples():
    return [
        Example(i, f"d{i}", {"src": s, "tgt": " ".join(s.split()[::2])})
        for i, s in enumerate(sentences(100, seed=23, low=6, high=13))
    ]


def task(target):
    def encode(e):
        return {"index": e.index, "src": h.s2s_source(e), "labels": target(e)}

    def collate(items):
        pad = h.cls_tok().pad_token_id
        src = pad2([i["src"] for i in items], pad)
        return {
            "input_ids": src,
            "attention_mask": (src != pad).long(),
            "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return h.s2s_task(
        encode,
        collate,
        lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        expected_targets=target,
        loss_sum=lambda out, b: out.loss * (b["labels"] != IGNORE_INDEX).sum(),
    )


def full(e):
    t = h.cls_tok()
    return t(e.fields["tgt"], add_special_tokens=False)["input_ids"]
