"""correct: the lamps of bug_images_grayscale_colour_classes told apart by position (top or bottom, any
colour) with the same training-only grayscale: grey, the position still shows."""

from tests.planted_tasks.bug_images_grayscale_colour_classes import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task("position")
