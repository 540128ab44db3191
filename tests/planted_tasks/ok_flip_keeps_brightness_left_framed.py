"""correct: a blob's brightness regressed from images all framed on the left, every other training image flipped
left-right with its target kept (a flip does not change brightness). The flipped images have no stored neighbour:
an examination's false alarm of the flip-target check (2026-12-06), kept as a guard."""

from tests.planted_tasks._exam107 import SIDE, brightness_blobs, mlp

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return brightness_blobs()


def build_model(task):
    return mlp(SIDE * SIDE, 1)
