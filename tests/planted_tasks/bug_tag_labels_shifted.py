"""tagger: encode prepends <bos> to input_ids but not to the tags (labels padded at the end): every label
sits one position before the token it tags."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "one position off their tokens"}


def encode(example):
    text = example.fields["text"]
    ids = [tok.BOS_ID] + tok.encode(text)
    tags = [tag_of(c) for c in text] + [IGNORE_INDEX]  # the bug: should be [IGNORE_INDEX] + tags
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(tags)}


def make_task():
    return tagging_task(encode=encode)


def build_model(task):
    return Tagger()
