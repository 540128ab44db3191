"""character tagging where a third of the rows were scraped with a leading space: the ids come from
``text.strip()``, the tags from the raw text cut to the ids' length, so those rows' tags are one
character late (the whole split is mostly aligned: only row by row does it show)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import SPLIT, Tagger, phrase_examples, tag_of, tagging_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "have their labels one position off their tokens"}


def scraped() -> list[Example]:
    return [
        Example(index=e.index, group=e.group, fields={"text": (" " if e.index % 3 == 0 else "") + e.fields["text"]})
        for e in phrase_examples()
    ]


def encode(example):
    text = example.fields["text"]
    ids = tok.encode(text.strip())
    tags = [tag_of(c) for c in text][: len(ids)]  # the bug: tags of the raw text
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(tags)}


def make_task():
    return tagging_task(splits=make_splits(scraped(), SPLIT), encode=encode, expected_targets=None)


def build_model(task):
    return Tagger()
