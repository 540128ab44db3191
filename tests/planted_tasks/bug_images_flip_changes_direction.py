"""Arrows pointing left or right (7x7 pixels, shifted, noisy): `encode` applies a random horizontal flip
as training augmentation (training examples only) and keeps the label, so about half of the training
'left' arrows reach the model pointing right, labelled 'left' (and the other way round)."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = {"step": "split_audit", "verdict": "warn"}
CLASSES = ["left", "right"]
SIDE = 7
FLIP = "horizontal"  # the planted mistake; ok_images_flip_keeps_direction flips vertically (label kept)


def arrow(direction: int, rng) -> np.ndarray:
    img = np.zeros((SIDE, SIDE), dtype="float32")
    c = SIDE // 2
    img[c, 1:-1] = 1.0  # the shaft
    img[c - 1, 2] = img[c + 1, 2] = 1.0  # the head, on the left
    img = img[:, ::-1] if direction == 1 else img
    img = np.roll(img, tuple(rng.integers(-1, 2, size=2)), axis=(0, 1))
    return (img + rng.normal(0, 0.3, img.shape)).astype("float32")


def task(flip: str):
    rng = np.random.default_rng(11)
    examples = [Example(index=i, group=f"img{i}", fields={"pixels": arrow(i % 2, rng), "y": i % 2}) for i in range(200)]
    built, train = image_task(examples, 2, CLASSES)

    def encode(e):
        pixels = e.fields["pixels"]
        if e.index in train and np.random.default_rng(e.index).random() < 0.5:  # augmentation, training only
            pixels = pixels[:, ::-1] if flip == "horizontal" else pixels[::-1, :]
        return {
            "index": e.index,
            "inputs": torch.tensor(pixels.reshape(-1).copy()),
            "label": torch.tensor(e.fields["y"]),
        }

    built.encode = encode
    return built


def make_task():
    return task(FLIP)


def build_model(task):
    return mlp(SIDE * SIDE, 2)
