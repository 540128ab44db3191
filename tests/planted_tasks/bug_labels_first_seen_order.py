"""each split numbers the classes in the order it first meets them: ids permuted between splits."""

import torch

from tests.planted_tasks._common import classification_task, mlp, vector_examples

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    task = classification_task(vector_examples(seed=5))
    encoders = {}
    for split, rows in task.splits.items():
        seen = {}
        for e in rows[1:] + rows[:1] if split == "val" else rows:  # val happens to start elsewhere
            seen.setdefault(e.fields["animal"], len(seen))
        encoders[split] = seen
    where = {e.index: split for split, rows in task.splits.items() for e in rows}

    def encode(example):  # the bug
        return {
            "index": example.index,
            "inputs": torch.from_numpy(example.fields["x"]),
            "label": encoders[where[example.index]][example.fields["animal"]],
        }

    task.encode = encode
    task.class_names = list(encoders["train"])
    return task


def build_model(task):
    return mlp(task)
