"""BERT word tagging (BertForTokenClassification, config-built): the sentence is tokenised as one string and the
word tags are written onto the first len(words) TOKENS ('one token per word'), the rest -100: wherever a word
splits into several pieces, every later tag lands on the wrong token. Loss over out.logits."""

import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2, sentences, tiny_bert, token_ce_sum

EXPECTED = {"step": "inspect", "verdict": "warn"}
TAGS = ["short", "long"]  # word of < 6 letters / >= 6 letters


def encode(e):
    t = h.cls_tok()
    ids = t(" ".join(e.fields["words"]), add_special_tokens=False)["input_ids"]
    tags = e.fields["tags"]
    labels = tags + [IGNORE_INDEX] * (len(ids) - len(tags))
    return {
        "index": e.index,
        "input_ids": [t.bos_token_id] + ids + [t.eos_token_id],
        "labels": [IGNORE_INDEX] + labels + [IGNORE_INDEX],
    }


def collate(items):
    t = h.cls_tok()
    ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
    return {
        "input_ids": ids,
        "attention_mask": (ids != t.pad_token_id).long(),
        "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    ex = []
    for i, s in enumerate(sentences(120, seed=31, low=3, high=8)):
        w = s.split()
        ex.append(Example(i, f"t{i}", {"words": w, "tags": [int(len(a) >= 6) for a in w]}))
    return TaskData(
        kind="token_classification",
        splits=make_splits(ex, h.SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: token_ce_sum(out.logits, b),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.logits.argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        target_position="same_position",
        expected_targets=lambda e: e.fields["tags"],
        class_names=TAGS,
        info={"num_classes": 2, "pad_id": h.cls_tok().pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return tiny_bert("token", 2)
