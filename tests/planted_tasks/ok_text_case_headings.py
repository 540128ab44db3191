"""correct: line classification heading vs body: headings are Title Case ("Quick Brown Fox"), body lines
sentence case ("Quick brown fox"); the same words in both. Case kept (it is the evidence)."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import SPLIT, MeanPoolClassifier, seqcls_task

EXPECTED = None


def examples():
    ws, rng = words(900, 9), np.random.default_rng(9)
    out = []
    for i in range(160):
        n = int(rng.integers(2, 5))
        w = ws[4 * i : 4 * i + n]
        heading = i % 2 == 0
        text = " ".join(x.capitalize() for x in w) if heading else " ".join([w[0].capitalize(), *w[1:]])
        out.append(Example(index=i, group=f"l{i}", fields={"text": text, "sentiment": "pos" if heading else "neg"}))
    return out


def make_task():
    t = seqcls_task(splits=make_splits(examples(), SPLIT))
    return t


def build_model(task):
    return MeanPoolClassifier()
