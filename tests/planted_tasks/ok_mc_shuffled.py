"""correct: multiple choice with every split's options shuffled (the right answer anywhere); its tiny subset
learns slowly at the default learning rate, its loss still falling at 300 updates."""

from tests.planted_tasks._multiple_choice import Model, task  # noqa: F401

EXPECTED = None
SETTINGS = {"checks": ["inspect", "split_audit", "alignment", "objective", "tiny_subset"]}


def make_task():
    return task(shuffle_train=True)
