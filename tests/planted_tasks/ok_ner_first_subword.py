"""correct: NER on word pieces, label on each word's FIRST piece only (later pieces and specials -100),
tags O=0, B-PER=1, I-PER=2, B-LOC=3 (entities mostly one word); BERT inputs with token_type_ids (all 0)
as the tokenizer gives them; BertForTokenClassification."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, tiny_bert, token_ce_sum, tokenizer
from tests.planted_tasks._common import words

EXPECTED = None
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]


def examples():
    vocab, people, places = words(300, seed=11), words(40, seed=21), words(40, seed=22)
    rng = np.random.default_rng(5)
    out = []
    for i in range(140):
        toks, tags = [], []
        for _ in range(int(rng.integers(5, 10))):
            r = rng.random()
            if r < 0.25:
                toks.append(str(rng.choice(people)).capitalize())
                tags.append("B-PER")
                if rng.random() < 0.2:
                    toks.append(str(rng.choice(people)).capitalize())
                    tags.append("I-PER")
            elif r < 0.4:
                toks.append(str(rng.choice(places)).capitalize())
                tags.append("B-LOC")
            else:
                toks.append(str(rng.choice(vocab)))
                tags.append("O")
        out.append(Example(index=i, group=f"doc{i}", fields={"tokens": toks, "tags": tags}))
    return out


def encode(e):
    t = tokenizer()
    ids, labels = [t.bos_token_id], [IGNORE_INDEX]
    for k, (word, tag) in enumerate(zip(e.fields["tokens"], e.fields["tags"])):
        pieces = t((" " if k else "") + word, add_special_tokens=False)["input_ids"]
        ids += pieces
        labels += [TAGS.index(tag)] + [IGNORE_INDEX] * (len(pieces) - 1)
    return {"index": e.index, "input_ids": ids + [t.eos_token_id], "labels": labels + [IGNORE_INDEX]}


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
    return TaskData(
        kind="token_classification",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=token_ce_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: (
            m(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"]).logits
        ),
        target_position="same_position",
        class_names=TAGS,
        info={"num_classes": len(TAGS), "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return tiny_bert("token", len(TAGS))
