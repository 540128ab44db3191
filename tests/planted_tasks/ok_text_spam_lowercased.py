"""correct: spam / ham SMS; spam is almost always shouted in capitals, but its words ('win', 'free',
'prize', 'claim') carry the class too. `encode` lower-cases (an uncased vocabulary, standard for this
task): the case is incidental, the words stay and still tell the classes apart."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = None
CLASSES = ["ham", "spam"]
SPAM = ["win", "free", "prize", "claim", "cash", "urgent", "offer", "txt", "now", "bonus"]
HAM = ["see", "you", "at", "lunch", "call", "me", "later", "home", "ok", "love", "dinner", "tomorrow"]


def examples():
    rng = np.random.default_rng(9)
    out = []
    for i in range(200):
        y = i % 2
        ws = list(rng.choice(SPAM if y else HAM, size=int(rng.integers(3, 6))))
        text = " ".join(ws)
        if y and rng.random() < 0.97:
            text = text.upper()
        elif not y and rng.random() < 0.5:
            text = text.capitalize()
        out.append(Example(index=i, group=f"sms{i}", fields={"text": text, "kind": CLASSES[y]}))
    return out


def encode(e):
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(e.fields["text"].lower())),
        "label": CLASSES.index(e.fields["kind"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["kind"],
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier()
