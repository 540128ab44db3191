"""correct: sequence classification whose encode adds <bos> and <eos>, the attention mask covering every
token collate returns (ids != pad)."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, seqcls_task

EXPECTED = None


def encode(example):
    ids = [tok.BOS_ID, *tok.encode(example.fields["text"]), tok.EOS_ID]
    return {
        "index": example.index,
        "input_ids": torch.tensor(ids),
        "label": SENTIMENT.index(example.fields["sentiment"]),
    }


def make_task():
    return seqcls_task(encode=encode)


def build_model(task):
    return MeanPoolClassifier()
