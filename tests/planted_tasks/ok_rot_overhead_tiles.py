"""correct: overhead (satellite) 8x8 tiles of a road (thin bright line) or a canal (wide band); there is
no 'up' in overhead imagery, so `encode` rotates training tiles by a random multiple of 90 degrees. In
this region roads mostly run east-west and canals north-south, but a rotated road is still a road."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = None
CLASSES = ["road", "canal"]


def tile(kind, rng):
    img = rng.uniform(0.2, 0.35) + np.zeros((8, 8))
    across = rng.random() < 0.85  # road: east-west (a row); canal: north-south (a column)
    at = int(rng.integers(1, 6))
    if kind == 0:
        line = np.s_[at, :] if across else np.s_[:, at]
        img[line] = 0.9
    else:
        band = np.s_[:, at : at + 3] if across else np.s_[at : at + 3, :]
        img[band] = 0.7
    return (img + rng.normal(0, 0.05, img.shape)).astype("float32")


def make_task():
    rng = np.random.default_rng(6)
    ex = [Example(index=i, group=f"tile{i}", fields={"pixels": tile(i % 2, rng), "y": i % 2}) for i in range(200)]
    holder = {}

    def encode(e):
        pix = e.fields["pixels"]
        if e.index in holder["train"]:
            pix = np.rot90(pix, int(np.random.default_rng(e.index).integers(4)))  # augmentation, train only
        return {"index": e.index, "inputs": torch.tensor(pix.reshape(-1).copy()), "label": torch.tensor(e.fields["y"])}

    task, holder["train"] = image_task(ex, 2, CLASSES, encode=encode)
    return task


def build_model(task):
    return mlp(64, 2)
