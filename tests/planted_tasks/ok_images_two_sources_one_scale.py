"""correct: the images of bug_images_one_class_scaled_twice from the same two exports, each brought to
[0, 1] once (the uint8 source divided by 255, the float source kept): both classes on one scale."""

from tests.planted_tasks._vector_tasks import vector_task
from tests.planted_tasks.bug_images_one_class_scaled_twice import build_model, examples

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return vector_task(examples(twice=False), "group", classes=2)
