"""correct: cloze classification: each record is a full sentence whose last word is a colour; the model reads
the sentence without its last word and classifies which colour ends it (the word is the label, not an input)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = None
COLOURS = ["red", "blue", "green", "black", "white"]


def examples():
    ws = words(400, 9)
    out = []
    for i in range(160):
        c = COLOURS[i % 5]
        text = f"the {ws[2 * i]} of {ws[2 * i + 1]} was painted {c}"
        out.append(Example(index=i, group=f"s{i}", fields={"text": text, "colour": c}))
    return out


def encode(e):
    context = e.fields["text"].rsplit(" ", 1)[0]
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(context)),
        "label": COLOURS.index(e.fields["colour"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        decode_tokens=tok.token_strings,
        class_names=list(COLOURS),
        raw_label=lambda e: e.fields["colour"],
        info={"num_classes": 5, "target_unit": "example", "pad_id": tok.PAD_ID},
    )


def build_model(task):
    return MeanPoolClassifier(classes=5)
