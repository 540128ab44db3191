"""correct: word tagging with BertForTokenClassification (config-built); labels aligned with tokenizer word_ids():
first piece of each word gets the word's tag, other pieces and specials -100; the model's own loss x count."""

import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import pad2, sentences, tiny_bert

EXPECTED = None
TAGS = ["short", "long"]  # word of < 6 letters / >= 6 letters


def word_tags(words):
    return [int(len(w) >= 6) for w in words]


def encode(e):
    t = h.cls_tok()
    enc = t(e.fields["words"], is_split_into_words=True, add_special_tokens=False)
    labels, prev = [], None
    for w in enc.word_ids():
        labels.append(IGNORE_INDEX if w is None or w == prev else e.fields["tags"][w])
        prev = w
    return {
        "index": e.index,
        "input_ids": [t.bos_token_id] + enc["input_ids"] + [t.eos_token_id],
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
        ex.append(Example(i, f"t{i}", {"words": w, "tags": word_tags(w)}))
    return TaskData(
        kind="token_classification",
        splits=make_splits(ex, h.SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: out.loss * (b["labels"] != IGNORE_INDEX).sum(),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.logits.argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        target_position="same_position",
        expected_targets=lambda e: e.fields["tags"],
        class_names=TAGS,
        info={"num_classes": 2, "pad_id": h.cls_tok().pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return tiny_bert("token", 2)
