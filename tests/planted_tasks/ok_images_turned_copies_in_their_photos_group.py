"""correct twin of bug_images_turned_copies_before_the_split: each copy keeps its photo's group, so a photo and
its copies land in one split together."""

from tests.planted_tasks._turned_copies import Model, task

EXPECTED = None


def make_task():
    return task(same_group=True)


def build_model(task):
    return Model()
