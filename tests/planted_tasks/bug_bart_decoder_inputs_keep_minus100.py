"""BART (config-built): decoder_input_ids made by the user's own right shift of the labels ([</s>] + labels[:-1])
with the -100 label padding left in (HF's shift_tokens_right replaces it by <pad>; this one does not)."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2
from tests.planted_tasks.ok_bart_shift_tokens_right import encode, forward

EXPECTED = {"step": "contract", "verdict": "fail", "said": "negative id"}


def collate(items):
    t = h.cls_tok()
    src = pad2([i["src"] for i in items], t.pad_token_id)
    labels = pad2([i["labels"] for i in items], IGNORE_INDEX)
    start = torch.full((len(items), 1), t.eos_token_id)
    dec = torch.cat([start, labels[:, :-1]], 1)  # the bug: -100 stays in the decoder inputs
    dmask = torch.zeros_like(dec)
    for r, i in enumerate(items):
        dmask[r, : len(i["labels"])] = 1
    return {
        "input_ids": src,
        "attention_mask": (src != t.pad_token_id).long(),
        "decoder_input_ids": dec,
        "decoder_attention_mask": dmask,
        "labels": labels,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return h.s2s_task(encode, collate, forward, loss_sum=lambda out, b: out.loss * (b["labels"] != IGNORE_INDEX).sum())


def build_model(task):
    return h.bart()
