"""reversal seq2seq (config-built T5): the targets are encoded by a T5-style call that already ends on '</s>',
and the collate appends eos once more: every decoder target ends '</s></s>' and the model learns to emit the
stop token after the stop token. expected_targets declared from the same doubled ids (what the user meant)."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "twice"}


def target(e):
    return h.s2s_target(e) + [h.cls_tok().eos_token_id]  # the bug: eos after the tokenizer's eos


def encode(e):
    return {"index": e.index, "input_ids": h.s2s_source(e), "labels": target(e)}


def collate(items):
    pad = h.cls_tok().pad_token_id
    width, target_width = max(len(i["input_ids"]) for i in items), max(len(i["labels"]) for i in items)
    ids = torch.full((len(items), width), pad)
    labels = torch.full((len(items), target_width), IGNORE_INDEX)
    for r, i in enumerate(items):
        ids[r, : len(i["input_ids"])] = torch.tensor(i["input_ids"])
        labels[r, : len(i["labels"])] = torch.tensor(i["labels"])
    index = torch.tensor([i["index"] for i in items])
    return {"input_ids": ids, "attention_mask": (ids != pad).long(), "labels": labels, "index": index}


def make_task():
    return h.s2s_task(
        encode,
        collate,
        lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        expected_targets=target,
    )


def build_model(task):
    return h.t5()
