"""sequence classifier: encode appends the class as a last input token ('|0' / '|1' after the text):
the label leaks into the inputs; validation accuracy will be perfect."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "gives the label away"}


def encode(example):
    label = SENTIMENT.index(example.fields["sentiment"])
    ids = tok.encode(example.fields["text"] + f"|{label}")  # the bug
    return {"index": example.index, "input_ids": torch.tensor(ids), "label": label}


def make_task():
    return seqcls_task(encode=encode)


def build_model(task):
    return MeanPoolClassifier()
