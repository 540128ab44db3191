"""correct: 8x8 grey images of a ring vs a filled square vs a cross; training-only augmentation: random
shift by up to 2 px (zero-filled crop-and-pad) and brightness/contrast jitter x[0.7,1.3] +-0.1. Labels kept
(shape does not change under shift or brightness)."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = None
CLASSES = ["ring", "square", "cross"]
S = 8


def shape(c, rng):
    img = np.zeros((S, S), "float32")
    if c == 0:
        img[2:6, 2:6] = 1
        img[3:5, 3:5] = 0
    elif c == 1:
        img[2:6, 2:6] = 1
    else:
        img[3:5, 1:7] = 1
        img[1:7, 3:5] = 1
    return (img * rng.uniform(0.8, 1.0) + rng.normal(0, 0.1, img.shape)).astype("float32")


def shift(img, dy, dx):
    out = np.zeros_like(img)
    H, W = img.shape
    ys, yd = (slice(0, H - dy), slice(dy, H)) if dy >= 0 else (slice(-dy, H), slice(0, H + dy))
    xs, xd = (slice(0, W - dx), slice(dx, W)) if dx >= 0 else (slice(-dx, W), slice(0, W + dx))
    out[yd, xd] = img[ys, xs]
    return out


def make_task():
    rng = np.random.default_rng(4)
    ex = [Example(index=i, group=f"img{i}", fields={"pixels": shape(i % 3, rng), "y": i % 3}) for i in range(240)]
    built, train = image_task(ex, 3, CLASSES)

    def encode(e):
        p = e.fields["pixels"]
        if e.index in train:
            r = np.random.default_rng(1000 + e.index)
            p = shift(p, *r.integers(-2, 3, size=2)) * r.uniform(0.7, 1.3) + r.uniform(-0.1, 0.1)
        return {
            "index": e.index,
            "inputs": torch.tensor(np.asarray(p, "float32").reshape(-1).copy()),
            "label": torch.tensor(e.fields["y"]),
        }

    built.encode = encode
    return built


def build_model(task):
    return mlp(S * S, 3)
