"""image classification: every photo was saved again mirrored and turned a quarter as files of their own, then
the folder was split file by file: validation holds mirrored or turned copies of training photos. The split
audit found no identical example (other pixels) and passed."""

from tests.planted_tasks._turned_copies import Model, task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "training images mirrored or rotated"}


def make_task():
    return task(same_group=False)


def build_model(task):
    return Model()
