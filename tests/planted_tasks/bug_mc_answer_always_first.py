"""multiple choice: training's options are built as [correct] + distractors and never shuffled (validation
comes shuffled from the benchmark), so every training label is 'A': the model learns 'always A'."""

from tests.planted_tasks._multiple_choice import Model, task  # noqa: F401

EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "every one of the 184 training labels is 0"}


def make_task():
    return task(shuffle_train=False)  # the bug
