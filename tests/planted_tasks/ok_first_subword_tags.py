"""correct: word-level tagging on byte tokens, HF 'label_all_tokens=False' convention: only the FIRST byte of
each word carries the word's tag ('short' < 6 letters <= 'long'), every other byte, space and pad is -100
(about 5 of 6 positions ignored); right padding, bidirectional encoder."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import EVERY_CHECK, words
from tests.planted_tasks._text_tasks import SPLIT, Tagger, tagging_task

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}
TAGS = ["short", "long"]


def examples(count=120, seed=4):
    ws = words(count * 5, seed)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, 6))
        out.append(Example(index=i, group=f"p{i}", fields={"text": " ".join(ws[5 * i : 5 * i + n])}))
    return out


def word_tags(text):
    """(position, tag) of each word's first byte."""
    tags, pos = [], 0
    for w in text.split(" "):
        tags.append((pos, int(len(w) >= 6)))
        pos += len(w) + 1
    return tags


def encode(example):
    text = example.fields["text"]
    labels = [IGNORE_INDEX] * len(text)
    for pos, tag in word_tags(text):
        labels[pos] = tag
    return {"index": example.index, "input_ids": torch.tensor(tok.encode(text)), "labels": torch.tensor(labels)}


def make_task():
    return tagging_task(
        splits=make_splits(examples(), SPLIT),
        encode=encode,
        expected_targets=lambda e: [tag for _, tag in word_tags(e.fields["text"])],
        class_names=list(TAGS),
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "num_classes": 2, "target_unit": "word"},
    )


def build_model(task):
    return Tagger(classes=2)
