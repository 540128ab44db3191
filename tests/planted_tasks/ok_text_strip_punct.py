"""correct: sentiment classification of sentences ending in ".", "!" or "?"; the text is normalised
(lower-cased, trailing punctuation stripped) before byte tokenisation, a common preprocessing step."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, sentence_examples, seqcls_task

EXPECTED = None


def examples():
    out = []
    for e in sentence_examples():
        text = e.fields["text"].capitalize() + ".!?"[e.index % 3] * (1 + e.index % 2)
        out.append(Example(index=e.index, group=e.group, fields={"text": text, "sentiment": e.fields["sentiment"]}))
    return out


def encode(e):
    text = e.fields["text"].lower().rstrip(".!? ")
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(text)),
        "label": SENTIMENT.index(e.fields["sentiment"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier()
