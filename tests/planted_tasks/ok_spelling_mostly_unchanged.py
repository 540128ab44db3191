"""correct: spelling correction seq2seq: sentences from a learner corpus where 80% are already correct
(target = source) and 20% have one typo (a swapped pair of letters) that the target fixes."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import ok_seq2seq as base
from tests.planted_tasks._common import words

EXPECTED = None
Model = base.Model


def examples():
    ws, rng = words(900, 4), np.random.default_rng(4)
    out = []
    for i in range(120):
        clean = " ".join(ws[3 * i : 3 * i + 3])
        src = clean
        if rng.random() < 0.2:
            j = int(rng.integers(0, len(clean) - 1))
            if clean[j] != " " and clean[j + 1] != " ":
                src = clean[:j] + clean[j + 1] + clean[j] + clean[j + 2 :]
        out.append(Example(index=i, group=f"s{i}", fields={"instruction": src, "answer": clean}))
    return out


def make_task():
    t = base.make_task()
    t.splits = make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    return t
