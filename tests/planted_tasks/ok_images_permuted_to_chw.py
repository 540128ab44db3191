"""correct: the HWC array transposed to CHW with .permute(2, 0, 1)."""

from tests.planted_tasks._reshaped_images import build_model, reshaped_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return reshaped_task(lambda hwc: hwc.permute(2, 0, 1))
