"""shared: NER (O, B-PER, B-LOC) given per whitespace word, as a CoNLL-like export writes it: names and places
often carry the comma after them ("Paris," is one word, tagged B-LOC); BertForTokenClassification from a config
over a WordPiece tokenizer built from the data (whole words in its vocabulary; BERT's pre-tokenizer splits
punctuation from the words). ``ner_task`` takes the
function that turns an example into (input ids, labels)."""

from functools import cache

import numpy as np
import torch
import transformers

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, token_ce_sum
from tests.planted_tasks._common import words
from tests.planted_tasks._exam94_hftok import bert_fast, tiny_bert

TAGS = ["O", "B-PER", "B-LOC"]


@cache
def examples():
    vocab, people, places = words(300, seed=11), words(40, seed=21), words(40, seed=22)
    rng = np.random.default_rng(7)
    out = []
    for i in range(240):
        toks, tags = [], []
        for _ in range(int(rng.integers(8, 14))):
            r = rng.random()
            if r < 0.4:
                pool, tag = (people, "B-PER") if r < 0.25 else (places, "B-LOC")
                toks.append(str(rng.choice(pool)).capitalize() + ("," if rng.random() < 0.5 else ""))
                tags.append(tag)
            else:
                toks.append(str(rng.choice(vocab)))
                tags.append("O")
        out.append(Example(index=i, group=f"doc{i}", fields={"tokens": toks, "tags": tags}))
    return out


@cache
def tokenizer():
    return bert_fast([" ".join(e.fields["tokens"]) for e in examples()], lowercase=False)


def ner_task(ids_and_labels):
    def encode(e):
        t = tokenizer()
        ids, labels = ids_and_labels(t, e.fields["tokens"], [TAGS.index(tag) for tag in e.fields["tags"]])
        return {
            "index": e.index,
            "input_ids": [t.cls_token_id] + ids + [t.sep_token_id],
            "labels": [IGNORE_INDEX] + labels + [IGNORE_INDEX],
        }

    def collate(items):
        t = tokenizer()
        ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
        return {
            "input_ids": ids,
            "attention_mask": (ids != t.pad_token_id).long(),
            "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
            "index": torch.tensor([i["index"] for i in items]),
        }

    t = tokenizer()
    return TaskData(
        kind="token_classification",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=token_ce_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits,
        target_position="same_position",
        class_names=TAGS,
        decode_tokens=lambda ids: t.convert_ids_to_tokens(list(ids)),
        info={"num_classes": len(TAGS), "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return transformers.BertForTokenClassification(tiny_bert(len(tokenizer()), num_labels=len(TAGS)))


def first_pieces(word_ids, tags):
    """Each word's tag on its first piece (word_ids: the encoding's word index of each token), -100 elsewhere."""
    labels, previous = [], None
    for w in word_ids:
        labels.append(IGNORE_INDEX if w is None or w == previous else (tags[w] if w < len(tags) else 0))
        previous = w
    return labels
