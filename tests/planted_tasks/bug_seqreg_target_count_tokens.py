"""sequence regression (one target per word): target_count copied from the token-level LM task,
`attention_mask.sum()`, while loss_sum sums one squared error per example: the engine divides the loss by ~7x
too many targets (a learning rate silently cut by the mean word length, and it varies with the batch)."""

from tests.planted_tasks._sequence_regression import Model, task  # noqa: F401

EXPECTED = {"step": "objective", "verdict": "fail"}


def make_task():
    return task(lambda b: b["attention_mask"].sum())
