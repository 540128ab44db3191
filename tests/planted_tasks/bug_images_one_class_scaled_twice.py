"""8x8 images (horizontal / vertical stripes) assembled from two exports: class 'vertical' came as
uint8 and is divided by 255 once; class 'horizontal' came already as floats in [0, 1] and goes through
the same `/ 255`. The class is given away by the brightness scale, not the stripes: training, the tiny
subset and validation all pass on it."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
TWICE = True  # the planted mistake; ok_images_two_sources_one_scale is the same task without it


def image(kind, rng):
    img = np.zeros((8, 8))
    k = int(rng.integers(0, 8))
    if kind == 0:
        img[k, :] = 1
    else:
        img[:, k] = 1
    img = np.clip(img * 0.7 + rng.normal(0.2, 0.15, img.shape), 0, 1)
    return img if kind == 0 else (img * 255).astype(np.uint8)  # two sources, two dtypes


def examples(twice: bool):
    rng = np.random.default_rng(13)
    out = []
    for i in range(200):
        kind = i % 2
        raw = image(kind, rng)
        scaled = raw.astype("float32") / 255.0 if twice or raw.dtype == np.uint8 else raw.astype("float32")
        out.append(Example(index=i, group=f"i{i}", fields={"x": scaled.reshape(-1), "y": kind}))
    return out


def make_task():
    return vector_task(examples(TWICE), "group", classes=2)


def build_model(task):
    return mlp(64, 2)
