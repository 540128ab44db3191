"""Blob-position regression (x in [0, 1]) whose training-only augmentation flips every other image left-right
and leaves its target x as it was (1 - x is due): those examples teach the mirrored relation (an outside
examination's miss, 2026-12-06: every check passed)."""

from tests.planted_tasks import _blob_positions
from tests.planted_tasks._blob_positions import build_model

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "leaves their regression targets as they were"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _blob_positions.make_task(flip_target=False)
