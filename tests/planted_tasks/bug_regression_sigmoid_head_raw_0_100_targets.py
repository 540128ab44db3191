"""exam-score regression: the model ends in a sigmoid (outputs in (0, 1)) but the targets were left in
points 0-100 (the `/ 100` forgotten): no output can reach any target, the sigmoid saturates, nothing is learnt."""

from tests.planted_tasks._bounded_regression import EVERY_CHECK, Model, task  # noqa: F401

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "A sigmoid at the end of forward bounds a regression"}
SETTINGS = EVERY_CHECK


def make_task():
    return task(scale=1.0)
