"""correct: exam-score regression, targets as a share of the maximum (score / 100, in [0, 1]), the model
ending in a sigmoid: legitimately bounded outputs for bounded targets."""

from tests.planted_tasks._bounded_regression import Model, task  # noqa: F401

EXPECTED = None


def make_task():
    return task(scale=100.0)
