"""correct: blob-position regression whose training-only left-right flip turns the target x into 1 - x."""

from tests.planted_tasks import _blob_positions
from tests.planted_tasks._blob_positions import build_model

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _blob_positions.make_task(flip_target=True)
