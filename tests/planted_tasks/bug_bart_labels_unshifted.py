"""BartForConditionalGeneration: collate passes decoder_input_ids = labels (with -100 -> pad) 'because the model
needs decoder inputs', forgetting shift_tokens_right: the decoder input at t is the very token it must predict."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    t = h.cls_tok()
    return {"index": e.index, "src": [t.bos_token_id] + h.s2s_source(e), "labels": h.s2s_target(e)}


def collate(items):
    t = h.cls_tok()
    src = pad2([i["src"] for i in items], t.pad_token_id)
    labels = pad2([i["labels"] for i in items], IGNORE_INDEX)
    dec = labels.masked_fill(labels == IGNORE_INDEX, t.pad_token_id)  # the bug: not shifted
    return {
        "input_ids": src,
        "attention_mask": (src != t.pad_token_id).long(),
        "decoder_input_ids": dec,
        "decoder_attention_mask": (labels != IGNORE_INDEX).long(),
        "labels": labels,
        "index": torch.tensor([i["index"] for i in items]),
    }


def forward(m, b):
    return m(
        input_ids=b["input_ids"],
        attention_mask=b["attention_mask"],
        decoder_input_ids=b["decoder_input_ids"],
        decoder_attention_mask=b["decoder_attention_mask"],
    ).logits


def make_task():
    return h.s2s_task(encode, collate, forward)


def build_model(task):
    return h.bart()
