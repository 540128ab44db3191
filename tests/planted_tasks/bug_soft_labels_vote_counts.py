"""soft labels from annotator votes fed to cross-entropy as raw COUNTS ([2, 1, 0] of 3 annotators, up to 5
per item), never divided by the number of votes: each row's loss is scaled by its annotator count, and the
targets are not distributions."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp, vector_examples

EXPECTED = {"step": "objective", "verdict": "warn"}
ids = {n: i for i, n in enumerate(CLASS_NAMES)}


def with_votes(examples, seed=5):
    rng = np.random.default_rng(seed)
    for e in examples:
        n = int(rng.integers(3, 6))
        true = ids[e.fields["animal"]]
        votes = np.zeros(len(CLASS_NAMES), dtype="float32")
        for _ in range(n):
            votes[true if rng.random() < 0.8 else int(rng.integers(len(CLASS_NAMES)))] += 1
        e.fields["votes"] = votes
    return examples


def encode(e):
    return {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "votes": torch.from_numpy(e.fields["votes"])}


def collate(items):
    votes = torch.stack([i["votes"] for i in items])
    return {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "votes": votes,
        "labels": votes.argmax(-1),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return classification_task(
        with_votes(vector_examples()),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["votes"], reduction="sum"),
        raw_label=lambda e: CLASS_NAMES[int(e.fields["votes"].argmax())],  # the majority vote's class
    )


def build_model(task):
    return mlp(task)
