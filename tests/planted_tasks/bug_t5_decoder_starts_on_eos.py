"""word-order reversal with a config-built T5: the collate builds decoder_input_ids with a BART recipe,
shift_tokens_right(labels, pad, decoder_start=</s>), while T5 starts its decoder on <pad>
(config.decoder_start_token_id): every answer's first token is trained from a start generate() never gives."""

import torch
from transformers.models.bart.modeling_bart import shift_tokens_right

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "model.config.decoder_start_token_id"}


def encode(e):
    return {"index": e.index, "src": h.s2s_source(e), "labels": h.s2s_target(e)}


def collate(items):
    t = h.cls_tok()
    src = pad2([i["src"] for i in items], t.pad_token_id)
    labels = pad2([i["labels"] for i in items], IGNORE_INDEX)
    dec = shift_tokens_right(labels, t.pad_token_id, t.eos_token_id)  # the bug: BART's start, not T5's <pad>
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


def forward(m, b):
    return m(
        input_ids=b["input_ids"],
        attention_mask=b["attention_mask"],
        decoder_input_ids=b["decoder_input_ids"],
        decoder_attention_mask=b["decoder_attention_mask"],
        labels=b["labels"],
    )


def make_task():
    return h.s2s_task(encode, collate, forward)


def build_model(task):
    return h.t5()
