"""correct: text classification with the text truncated to max_length=40 byte tokens (a user's max_length
cut: texts of 1-8 words, long ones lose up to ~30 characters, a few only one to six)."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, seqcls_task

EXPECTED = None
MAX_LEN = 40


def examples():
    ws = words(1300, 5)
    rng = np.random.default_rng(5)
    out = []
    for i in range(160):
        n = int(rng.integers(1, 9))
        text = " ".join(ws[8 * i : 8 * i + n])
        out.append(Example(index=i, group=f"s{i}", fields={"text": text, "sentiment": SENTIMENT[int(text[0] < "m")]}))
    return out


def encode(e):
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(e.fields["text"])[:MAX_LEN]),
        "label": SENTIMENT.index(e.fields["sentiment"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier()
