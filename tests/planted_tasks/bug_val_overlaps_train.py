"""splits cut by hand with overlapping slices (train = rows[:140], val = rows[120:]): 20 validation
rows are training rows, same index, same group, same features."""

from tests.planted_tasks._common import classification_task, mlp, vector_examples

EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "the splits overlap"}


def make_task():
    rows = vector_examples()
    n_train = 140
    splits = {"train": rows[:n_train], "val": rows[n_train - 20 :], "test": []}  # the bug: should start at n_train
    return classification_task(splits=splits)


def build_model(task):
    return mlp(task)
