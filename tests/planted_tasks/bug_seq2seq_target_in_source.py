"""word-order reversal with a config-built T5 given labels: the source is built from a display template that shows
the pair, "source = target", and that template was reused for the encoder's input, so the encoder sees the answer and
the model learns to copy it (at inference time there is nothing to copy)."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "the target is written into the source"}


def source(e):
    t = h.cls_tok()
    shown = f"{e.fields['src']} = {e.fields['tgt']}"  # the bug: the display template, answer included
    return t(shown, add_special_tokens=False)["input_ids"] + [t.eos_token_id]


def encode(e):
    return {"index": e.index, "src": source(e), "labels": h.s2s_target(e)}


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
