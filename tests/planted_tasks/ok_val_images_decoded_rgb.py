"""correct: every split's images decoded alike (RGB), the same normalisation after."""

from tests.planted_tasks._decoded_images import build_model, decoded_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return decoded_task(lambda hwc: hwc)
