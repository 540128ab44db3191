"""sequence classification: encode adds <bos> and <eos> around the text, but the attention mask is built from
the text's own length, stored before they were added: every row's last character and <eos> are marked as
padding (never attended to, never pooled)."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, pad_collate_sentences, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the attention mask hides real tokens"}


def encode(example):
    text = example.fields["text"]
    return {
        "index": example.index,
        "input_ids": torch.tensor([tok.BOS_ID, *tok.encode(text), tok.EOS_ID]),
        "length": len(text),  # the text's characters, before <bos> and <eos>
        "label": SENTIMENT.index(example.fields["sentiment"]),
    }


def collate(items):
    batch = pad_collate_sentences(items)
    for row, item in enumerate(items):
        batch["attention_mask"][row] = 0
        batch["attention_mask"][row, : item["length"]] = 1  # the bug: a stale length
    return batch


def make_task():
    return seqcls_task(encode=encode, collate=collate)


def build_model(task):
    return MeanPoolClassifier()
