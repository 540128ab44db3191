"""multi-label tags: the tag -> column mapping is built per split in first-seen order (a MultiLabelBinarizer
fitted on each split / `dict.fromkeys` over each split's tags): validation's columns mean other tags than
training's."""

from tests.planted_tasks._multilabel import Model, first_seen, task  # noqa: F401

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "in val but"}


def make_task():
    return task(first_seen)
