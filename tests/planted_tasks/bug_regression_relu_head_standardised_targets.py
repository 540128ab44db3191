"""exam-score regression with standardised targets (mean 0, sd 1): the model ends in a ReLU ("a score is never
negative", true of the raw points, not of the standardised targets), so every target below 0 is out of reach.
The tiny subset failed with no cause (a sigmoid's bound was named, a ReLU's not)."""

import torch

from tests.planted_tasks._bounded_regression import EVERY_CHECK, ReluHead, examples, task

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "A ReLU at the end of forward bounds a regression"}
SETTINGS = EVERY_CHECK
SCORES = torch.tensor([e.fields["score"] for e in examples()])


def make_task():
    standardised = task(scale=float(SCORES.std()))
    encode = standardised.encode
    mean = float(SCORES.mean() / SCORES.std())
    standardised.encode = lambda e: {**(item := encode(e)), "y": item["y"] - mean}
    return standardised


class Model(ReluHead):
    pass
