"""correct: star ratings regressed (3.7 stars), collated as float32 labels."""

import torch

from tests.planted_tasks import _star_ratings
from tests.planted_tasks._star_ratings import build_model

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _star_ratings.make_task(torch.float32)
