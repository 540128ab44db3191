"""correct: camera-trap crops (6x10) of a bird or a fish at a fish ladder; the camera's framing puts
birds (perched on the left bank) mostly on the left and fish (coming up the ladder) mostly on the
right. `encode` applies a random horizontal flip to training examples only: a mirrored bird is still a
bird, so the label stays true (the flip only removes a framing bias)."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = None
CLASSES = ["bird", "fish"]
H, W = 6, 10


def animal(kind, rng):
    img = np.zeros((H, W))
    left = rng.random() < 0.85 if kind == 0 else rng.random() < 0.15
    cx = int(rng.integers(1, 4)) if left else int(rng.integers(5, 8))
    cy = int(rng.integers(1, 4))
    if kind == 0:  # bird: a V (wings)
        img[cy, cx] = img[cy, cx + 2] = 1.0
        img[cy + 1, cx + 1] = 1.0
    else:  # fish: a horizontal body and a tail
        img[cy + 1, cx : cx + 2] = 1.0
        img[cy, cx + 2] = img[cy + 2, cx + 2] = 1.0
    return (img + rng.normal(0, 0.2, img.shape)).astype("float32")


def make_task():
    rng = np.random.default_rng(5)
    ex = [Example(index=i, group=f"shot{i}", fields={"pixels": animal(i % 2, rng), "y": i % 2}) for i in range(200)]
    holder = {}

    def encode(e):
        pix = e.fields["pixels"]
        if e.index in holder["train"] and np.random.default_rng(e.index).random() < 0.5:  # augmentation, train only
            pix = pix[:, ::-1]
        return {"index": e.index, "inputs": torch.tensor(pix.reshape(-1).copy()), "label": torch.tensor(e.fields["y"])}

    task, holder["train"] = image_task(ex, 2, CLASSES, encode=encode)
    return task


def build_model(task):
    return mlp(H * W, 2)
