"""each split fits its own label encoder (sorted names present in it); validation has no 'cat'."""

import torch

from pilot.data.split import make_splits
from tests.planted_tasks._common import SPLIT, classification_task, mlp, vector_examples

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    examples = vector_examples()
    splits = make_splits(examples, SPLIT)
    splits["val"] = [e for e in splits["val"] if e.fields["animal"] != "cat"]
    encoders = {
        split: {name: i for i, name in enumerate(sorted({e.fields["animal"] for e in rows}))}
        for split, rows in splits.items()
        if rows
    }
    where = {e.index: split for split, rows in splits.items() for e in rows}

    def encode(example):  # the bug: the id depends on the example's split
        return {
            "index": example.index,
            "inputs": torch.from_numpy(example.fields["x"]),
            "label": encoders[where[example.index]][example.fields["animal"]],
        }

    return classification_task(examples, splits=splits, encode=encode, class_names=sorted({"cat", "dog", "bird"}))


def build_model(task):
    return mlp(task)
