"""correct: ELECTRA-style replaced-token detection: 15% of each sentence's word pieces replaced by a random
other piece (fixed per example), label 1 = replaced / 0 = original, -100 on <s>, </s> and padding; BERT
inputs as a tokenizer gives them (input_ids, token_type_ids all 0, attention_mask); BertForTokenClassification."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, sentences, tiny_bert, token_ce_sum, tokenizer, with_specials

EXPECTED = None
NAMES = ["original", "replaced"]


def encode(e):
    t = tokenizer()
    ids = t(e.fields["text"], add_special_tokens=False)["input_ids"]
    rng = np.random.default_rng(e.index)
    labels = []
    for k, x in enumerate(ids):
        if rng.random() < 0.15:
            ids[k] = int(rng.choice([y for y in range(5, len(t)) if y != x]))
            labels.append(1)
        else:
            labels.append(0)
    ids = with_specials(ids)
    return {"index": e.index, "input_ids": ids, "labels": [IGNORE_INDEX] + labels + [IGNORE_INDEX]}


def collate(items):
    t = tokenizer()
    ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
    return {
        "input_ids": ids,
        "token_type_ids": torch.zeros_like(ids),
        "attention_mask": (ids != t.pad_token_id).long(),
        "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    t = tokenizer()
    ex = [Example(index=i, group=f"d{i}", fields={"text": s}) for i, s in enumerate(sentences(140, seed=3))]
    return TaskData(
        kind="token_classification",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=token_ce_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: (
            m(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"]).logits
        ),
        target_position="same_position",
        class_names=NAMES,
        info={"num_classes": 2, "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return tiny_bert("token", 2)
