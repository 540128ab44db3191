"""dual encoder with in-batch negatives whose collate gives labels = zeros(B) (MoCo's recipe, where the
positive is column 0 of a [B, 1+K] matrix) over a [B, B] score matrix: every query is trained towards the
first row's document (an outside examination, 2026-12-07: only the tiny subset failed, naming no cause)."""

import torch

from tests.planted_tasks import ok_contrastive_in_batch as base

EXPECTED = {"step": "objective", "verdict": "fail", "said": "every row's label is 0 in every probed micro-batch"}


def collate(items):
    return {**base.collate(items), "labels": torch.zeros(len(items), dtype=torch.long)}


def make_task():
    task = base.make_task()
    task.collate = collate
    return task


def build_model(task):
    return base.DualEncoder()
