"""correct: all-sky camera frames (8x8 grey, [0, 1], one export, one scaling) classified day / night;
night frames are genuinely dark (sensor noise and a faint sky glow, no lights), day frames bright with
clouds; the darkest corners of day frames overlap the night frames' values. Brightness IS the class."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = None
CLASSES = ["night", "day"]


def frame(day, rng):
    yy, xx = np.mgrid[:8, :8]
    vignette = 1 - 0.06 * ((yy - 3.5) ** 2 + (xx - 3.5) ** 2) / 12.25  # darker towards the corners
    if day:
        sky = rng.uniform(0.35, 0.75) * vignette
        cy, cx = rng.uniform(0, 8, 2)
        sky = sky + rng.uniform(0.1, 0.3) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 4)  # a cloud
        sky = sky * np.where(rng.random((8, 8)) < 0.05, 0.05, 1.0)  # a few dead/shadowed pixels
    else:
        sky = rng.uniform(0.01, 0.05) * vignette
    return np.clip(sky + rng.normal(0, 0.01, (8, 8)), 0, 1).astype("float32")


def make_task():
    rng = np.random.default_rng(4)
    ex = [Example(index=i, group=f"frame{i}", fields={"pixels": frame(i % 2, rng), "y": i % 2}) for i in range(200)]
    return image_task(ex, 2, CLASSES)[0]


def build_model(task):
    return mlp(64, 2)
