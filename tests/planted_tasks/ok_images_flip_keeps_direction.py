"""correct: the left/right arrows of bug_images_flip_changes_direction with a vertical flip as training
augmentation: an arrow flipped top to bottom still points the same way, so the label stays true."""

from tests.planted_tasks.bug_images_flip_changes_direction import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task("vertical")
