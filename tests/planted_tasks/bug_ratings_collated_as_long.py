"""Star ratings regressed (3.7 stars) whose collate builds labels with dtype=torch.long (a classifier's collate
copied): every target loses its fraction, 3.7 trained as 3 (an outside examination's miss, 2026-12-06:
validation RMSE 0.50 with a bias of -0.48, against 0.13)."""

import torch

from tests.planted_tasks import _star_ratings
from tests.planted_tasks._star_ratings import build_model

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "cut to integers"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _star_ratings.make_task(torch.long)
