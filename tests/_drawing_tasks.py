"""Digits tasks that draw random numbers as users' tasks do (tests/test_child_process.py): an encode that
augments from a generator made in make_task, a collate that draws from NumPy's global generator."""

from __future__ import annotations

import random

import numpy as np
import torch

from pilot.data.digits import make_task as digits


def encode_drawing(in_features: int = 64, num_classes: int = 10, split=None):
    """Each example's sign flipped by a seeded generator of make_task's own, once per encode call."""
    task = digits(in_features, num_classes, split)
    flips, encode = random.Random(0), task.encode

    def flipped(example):
        item = encode(example)
        return {**item, "inputs": -item["inputs"]} if flips.random() < 0.5 else item

    task.encode = flipped
    return task


def collate_drawing_numpy(in_features: int = 64, num_classes: int = 10, split=None):
    """Noise added to every batch from NumPy's global generator, which pilot seeds and checkpoints."""
    task = digits(in_features, num_classes, split)
    collate = task.collate

    def noisy(items):
        batch = collate(items)
        noise = torch.from_numpy(np.random.normal(0, 0.1, size=tuple(batch["inputs"].shape))).to(batch["inputs"].dtype)
        return {**batch, "inputs": batch["inputs"] + noise}

    task.collate = noisy
    return task
