"""tagger for a right-to-left model: encode feeds the text reversed (text[::-1]) but keeps the tags in reading
order, so the tag at position t belongs to the character at n-1-t. Every check passed: the offsets tried were
constant (one before, one after), and the tiny subset memorised the 8 examples."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "opposite order to their tokens"}


def encode(example):
    text = example.fields["text"]
    ids = tok.encode(text[::-1])  # right to left
    tags = [tag_of(c) for c in text]  # the bug: should be reversed too
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(tags)}


def make_task():
    return tagging_task(encode=encode)


def build_model(task):
    return Tagger()
