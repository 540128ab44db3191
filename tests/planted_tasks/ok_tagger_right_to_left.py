"""correct twin of bug_tagger_input_reversed: a right-to-left tagger whose text and tags are both reversed."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

EXPECTED = None


def encode(example):
    text = example.fields["text"][::-1]
    return {
        "index": example.index,
        "input_ids": torch.tensor(tok.encode(text)),
        "labels": torch.tensor([tag_of(c) for c in text]),
    }


def make_task():
    return tagging_task(encode=encode, expected_targets=lambda e: [tag_of(c) for c in e.fields["text"][::-1]])


def build_model(task):
    return Tagger()
