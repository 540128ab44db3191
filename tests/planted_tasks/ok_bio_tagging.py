"""correct: BIO entity tagging on byte tokens: capitalised words are entities (B on the first character,
I on the rest), everything else O (spaces O). Case is kept (it is the evidence)."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = None
TAGS = ["O", "B", "I"]


def bio(text):
    out, prev = [], " "
    for ch in text:
        if ch == " ":
            out.append(0)
        elif prev == " ":
            out.append(1 if ch.isupper() else 0)
        else:
            out.append(2 if out[-1] in (1, 2) else 0)
        prev = ch
    return out


def examples():
    ws, rng = words(800, 5), np.random.default_rng(5)
    ex = []
    for i in range(120):
        n = int(rng.integers(2, 5))
        toks = [w.capitalize() if rng.random() < 0.35 else w for w in ws[4 * i : 4 * i + n]]
        ex.append(Example(index=i, group=f"p{i}", fields={"text": " ".join(toks)}))
    return ex


def encode(e):
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(e.fields["text"])),
        "labels": torch.tensor(bio(e.fields["text"])),
    }


def make_task():
    return tagging_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        expected_targets=lambda e: bio(e.fields["text"]),
        class_names=list(TAGS),
    )


def build_model(task):
    return Tagger()
