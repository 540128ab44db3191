"""extractive QA: start/end labels are the answer's CHARACTER offsets in the context (SQuAD's answer_start)
used as token positions; the loss is a plain cross_entropy over the row's positions, so every label past the
row's length crashes it ('Target 41 is out of bounds') in every step that computes the loss."""

import dataclasses

import torch

from tests.planted_tasks import _qa_spans as _qa

EXPECTED = {"step": "contract", "verdict": "fail", "said": "position labels past the sequence"}


def char_offsets(e):
    """The answer word's first and last character in the context text, as the data set gives them."""
    ctx, k = e.fields["context"], e.fields["answer_word"]
    start = len(" ".join(ctx[:k])) + (1 if k else 0)
    return [start, start + len(ctx[k]) - 1]


def encode(e):
    item = _qa.encode_with(lambda prefix, spans, k, kept: (0, 0))(e)
    return {**item, "pos": char_offsets(e)}  # the bug: characters, not tokens


def loss_sum(out, b):
    logits = out["logits"]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), b["labels"].reshape(-1), reduction="sum"
    )


def make_task():
    return dataclasses.replace(_qa.qa_task(None), encode=encode, loss_sum=loss_sum)


def build_model(task):
    return _qa.build()
