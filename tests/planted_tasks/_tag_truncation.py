"""shared: NER over word pieces (first piece tagged, later pieces -100), long documents truncated to MAX
pieces keeping the END of the document (tokenizer.truncation_side = 'left': the entities cluster at the end)."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, tiny_bert, token_ce_sum, tokenizer
from tests.planted_tasks._common import words

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
MAX = 24
_TOK = None


def tk():
    global _TOK
    if _TOK is None:
        _TOK = tokenizer()
    return _TOK


def examples():
    vocab, people, places = words(300, seed=11), words(40, seed=21), words(40, seed=22)
    rng = np.random.default_rng(7)
    out = []
    for i in range(160):
        toks, tags = [], []
        for _ in range(int(rng.integers(4, 12))):
            r = rng.random()
            if r < 0.25:
                toks.append(str(rng.choice(people)).capitalize())
                tags.append("B-PER")
                if rng.random() < 0.4:
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


def full(e):
    enc = tk()(e.fields["tokens"], is_split_into_words=True, add_special_tokens=False)
    labels, prev = [], None
    for w in enc.word_ids():
        labels.append(TAGS.index(e.fields["tags"][w]) if w != prev else IGNORE_INDEX)
        prev = w
    return enc["input_ids"], labels


def task(cut_labels):
    def encode(e):
        ids, labels = full(e)
        ids = ids[-MAX:]  # truncation_side="left"
        labels = cut_labels(labels)
        t = tk()
        return {
            "index": e.index,
            "input_ids": [t.bos_token_id] + ids + [t.eos_token_id],
            "labels": [IGNORE_INDEX] + labels + [IGNORE_INDEX],
        }

    def collate(items):
        t = tk()
        ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
        return {
            "input_ids": ids,
            "attention_mask": (ids != t.pad_token_id).long(),
            "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="token_classification",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: token_ce_sum(out.logits, b),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.logits.argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        target_position="same_position",
        class_names=TAGS,
        info={"num_classes": len(TAGS), "pad_id": tk().pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build():
    return tiny_bert("token", len(TAGS))
