"""BartForConditionalGeneration (config-built), word-order reversal: the encode builds decoder_input_ids as
shift_tokens_right(source) cut to the labels' length -- the SOURCE, copied from a denoising-pretraining collator where source and
target are the same text -- instead of shift_tokens_right(labels, ...). Teacher forcing feeds the decoder the
source's tokens, not the target prefix it will generate from at inference."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    t = h.cls_tok()
    src, labels = [t.bos_token_id] + h.s2s_source(e), h.s2s_target(e)
    # the denoising collator's shift_tokens_right, applied per example to the source, cut/padded to the labels
    dec = ([t.eos_token_id] + src)[: len(labels)]
    dec += [t.pad_token_id] * (len(labels) - len(dec))
    return {"index": e.index, "src": src, "dec": dec, "labels": labels}


def collate(items):
    t = h.cls_tok()
    src = pad2([i["src"] for i in items], t.pad_token_id)
    labels = pad2([i["labels"] for i in items], IGNORE_INDEX)
    dec = pad2([i["dec"] for i in items], t.pad_token_id)
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
    )


def make_task():
    return h.s2s_task(encode, collate, forward)


def build_model(task):
    return h.bart()
