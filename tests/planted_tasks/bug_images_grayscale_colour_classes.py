"""Traffic-light crops (RGB 3x5x5): is the lamp red or green? `encode` applies a RandomGrayscale(p=0.5)
copied from an ImageNet recipe to training examples only: a red and a green lamp of one brightness are
the same grey, so half the training examples carry no evidence of their label."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = {"step": "split_audit", "verdict": "warn"}
CLASSES = ["red", "green"]
COLOUR = {0: (0.9, 0.1, 0.1), 1: (0.1, 0.49, 0.2)}  # equal luminance (0.299 R + 0.587 G + 0.114 B)
BY = "colour"  # the planted mistake; ok_images_grayscale_shape_classes tells its classes by position


def lamp(y: int, rng, by: str) -> np.ndarray:
    img = np.full((3, 5, 5), 0.05)
    cx = int(rng.integers(1, 4))
    cy = int(rng.integers(1, 4)) if by == "colour" else (1 if y == 0 else 3)  # by position: top or bottom
    colour = COLOUR[y] if by == "colour" else COLOUR[int(rng.integers(2))]
    brightness = rng.uniform(0.7, 1.3)
    for c in range(3):
        img[c, cy - 1 : cy + 2, cx - 1 : cx + 2] = colour[c] * brightness
    return np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1).astype("float32")


def task(by: str):
    rng = np.random.default_rng(12)
    rows = [Example(index=i, group=f"crop{i}", fields={"pixels": lamp(i % 2, rng, by), "y": i % 2}) for i in range(200)]
    held = {}

    def encode(e):
        pixels = e.fields["pixels"]
        if e.index in held["train"] and np.random.default_rng(e.index).random() < 0.5:  # training only
            grey = 0.299 * pixels[0] + 0.587 * pixels[1] + 0.114 * pixels[2]
            pixels = np.stack([grey, grey, grey])
        return {
            "index": e.index,
            "inputs": torch.tensor(pixels.reshape(-1).copy()),
            "label": torch.tensor(e.fields["y"]),
        }

    built, held["train"] = image_task(rows, 2, CLASSES if by == "colour" else ["top", "bottom"], encode=encode)
    return built


def make_task():
    return task(BY)


def build_model(task):
    return mlp(75, 2)
