"""Is the message shouted (ALL CAPS) or calm? `encode` lower-cases every text first (copied from an
uncased-model pipeline, `text.lower()`), which erases the only evidence of the label: both classes look
the same to the model, and the loss still falls on the training rows by memorising them."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import MeanPoolClassifier, sentence_examples, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "warn"}
CLASSES = ["calm", "shouting"]
LOWER = True  # the planted mistake; ok_text_case_label_kept is the same task without it


def examples():
    rng = np.random.default_rng(21)
    out = []
    for e in sentence_examples():
        loud = int(rng.integers(2))
        text = e.fields["text"].upper() if loud else e.fields["text"]
        out.append(Example(index=e.index, group=e.group, fields={"text": text, "tone": CLASSES[loud]}))
    return out


def encoder(lower: bool):
    def encode(e):
        text = e.fields["text"].lower() if lower else e.fields["text"]
        return {"index": e.index, "input_ids": torch.tensor(tok.encode(text)), "label": CLASSES.index(e.fields["tone"])}

    return encode


def task(lower: bool):
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encoder(lower),
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["tone"],
        decode_tokens=tok.token_strings,
    )


def make_task():
    return task(LOWER)


def build_model(task):
    return MeanPoolClassifier()
