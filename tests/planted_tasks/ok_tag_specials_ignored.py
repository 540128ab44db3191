"""correct: tagging with <bos> ... <eos> around each sentence ([CLS]/[SEP]), their labels -100;
expected_targets keeps one tag per character (control for x4_bug_tag_specials_labelled)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

EXPECTED = None


def encode(example):
    text = example.fields["text"]
    ids = [tok.BOS_ID] + tok.encode(text) + [tok.EOS_ID]
    labels = [IGNORE_INDEX] + [tag_of(c) for c in text] + [IGNORE_INDEX]
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


def make_task():
    return tagging_task(encode=encode)


def build_model(task):
    return Tagger()
