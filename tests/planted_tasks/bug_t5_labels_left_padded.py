"""word reversal with a config-built T5 given labels only: the target side is padded with the tokenizer of the
decoder-only project, padding_side='left' (labels [-100, -100, t0, t1, </s>]); T5's _shift_right turns that into
decoder inputs [start, pad, pad, t0, t1] with no decoder mask: the first target is predicted after a run of pads,
never as at generation time (right after the start token), and depends on the row's padding."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "pads the labels on the left"}


def left_pad(seqs, value):
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for r, s in enumerate(seqs):
        out[r, width - len(s) :] = torch.tensor(s)
    return out


def encode(e):
    return {"index": e.index, "src": h.s2s_source(e), "labels": h.s2s_target(e)}


def collate(items):
    pad = h.cls_tok().pad_token_id
    src = pad2([i["src"] for i in items], pad)
    return {
        "input_ids": src,
        "attention_mask": (src != pad).long(),
        "labels": left_pad([i["labels"] for i in items], IGNORE_INDEX),  # the bug: left padded targets
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
