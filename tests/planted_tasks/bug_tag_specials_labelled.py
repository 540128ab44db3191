"""tagging, HF-style: <bos> ... <eos> wrap every sentence ([CLS]/[SEP]); their labels are set to 0
('consonant', the 'O'-like default of a zeros() init) instead of -100, so they are trained and counted."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(example):
    text = example.fields["text"]
    ids = [tok.BOS_ID] + tok.encode(text) + [tok.EOS_ID]
    labels = torch.zeros(len(ids), dtype=torch.long)  # the bug: specials stay 0, not -100
    labels[1:-1] = torch.tensor([tag_of(c) for c in text])
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": labels}


def make_task():
    return tagging_task(encode=encode)


def build_model(task):
    return Tagger()
