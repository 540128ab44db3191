"""correct: word-order reversal with a config-built T5ForConditionalGeneration given ONLY labels (target + </s>,
padded with -100): T5 builds decoder_input_ids itself (_shift_right, -100 -> pad); loss summed over out.logits."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = None


def encode(e):
    return {"index": e.index, "src": h.s2s_source(e), "labels": h.s2s_target(e)}


def collate(items):
    import torch

    src = pad2([i["src"] for i in items], h.cls_tok().pad_token_id)
    return {
        "input_ids": src,
        "attention_mask": (src != h.cls_tok().pad_token_id).long(),
        "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
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
