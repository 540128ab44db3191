"""correct: FAQ retrieval dual encoder with in-batch negatives: query = a user question (lower case words),
doc = the FAQ entry's title (Title Case of the same key word + a category word); logits q@d.T/0.05,
labels arange(B) in collate."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import ok_contrastive_in_batch as base
from tests.planted_tasks._common import words

EXPECTED = None
CATS = ["Billing", "Account", "Shipping", "Returns"]


def make_task():
    ws, _rng = words(400, 12), np.random.default_rng(12)
    ex = []
    for i in range(120):
        q = f"how do i {ws[2 * i]} my {ws[2 * i + 1]}"
        d = f"{CATS[i % 4]}: {ws[2 * i].capitalize()} {ws[2 * i + 1].capitalize()}"
        ex.append(Example(index=i, group=f"faq{i}", fields={"query": q, "doc": d}))
    t = base.make_task()
    t.splits = make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    return t


def build_model(task):
    return base.DualEncoder()
