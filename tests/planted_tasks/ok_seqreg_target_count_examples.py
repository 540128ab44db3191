"""correct: sequence regression (word -> share of vowels), a packed GRU, MSE summed, target_count = examples."""

from tests.planted_tasks._sequence_regression import Model, task  # noqa: F401

EXPECTED = None


def make_task():
    return task(lambda b: torch.tensor(b["labels"].numel()))


import torch  # noqa: E402
