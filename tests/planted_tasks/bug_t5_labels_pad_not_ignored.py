"""T5 given only labels, but collate pads labels with the tokenizer's pad id (tokenizer.pad(...) on the targets,
the 'replace pad by -100' step forgotten): T5 keeps them as targets, so every padded position trains '<pad>'."""

import torch

from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    return {"index": e.index, "src": h.s2s_source(e), "labels": h.s2s_target(e)}


def collate(items):
    pad = h.cls_tok().pad_token_id
    src = pad2([i["src"] for i in items], pad)
    return {
        "input_ids": src,
        "attention_mask": (src != pad).long(),
        "labels": pad2([i["labels"] for i in items], pad),  # the bug: pad, not -100
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return h.s2s_task(
        encode,
        collate,
        lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
    )


def build_model(task):
    return h.t5()
