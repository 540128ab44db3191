"""NLI on one concatenated string: premise + " [SEP] " + hypothesis, tokenised and truncated to 48 tokens from
the right (the tokenizer's default side); long premises push the hypothesis out entirely, so about half the rows
carry no hypothesis at all and their label ('entailment': two of the premise's words / 'neutral': two others) cannot
be read from the input."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import SPLIT, MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "warn"}
LABELS = ["entailment", "neutral"]
MAX_LEN = 48


def examples(count=160, seed=3):
    vocab = words(400, seed)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(3, 12))
        premise = [str(w) for w in rng.choice(vocab, n, replace=False)]
        label = int(rng.integers(2))
        hyp = " ".join(
            str(w)
            for w in (
                rng.choice(premise, 2, replace=False)
                if label == 0
                else rng.choice([w for w in vocab if w not in premise], 2, replace=False)
            )
        )
        out.append(Example(i, f"n{i}", {"premise": " ".join(premise), "hypothesis": hyp, "nli": LABELS[label]}))
    return out


def encode(e):
    text = e.fields["premise"] + " [SEP] " + e.fields["hypothesis"]
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(text)[:MAX_LEN]),
        "label": LABELS.index(e.fields["nli"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), SPLIT),
        encode=encode,
        class_names=list(LABELS),
        raw_label=lambda e: e.fields["nli"],
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier(2)
