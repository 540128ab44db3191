"""CORRECT: fabric inspection. Photos of a woven textile whose threads repeat every 3 pixels across the
image at the camera's resolution (vertical warp threads); a defect (a broken thread: a darker horizontal
run, or a hole) or none. HWC uint8 -> permute(2, 0, 1), ImageNet normalisation; the right CHW layout.
Tests image_layout (values 3 columns apart correlate more than neighbours: here because of the weave)."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import _exam94_img as _img
from tests.planted_tasks._exam94_img import SmallCNN, image_task, to_tensor

EXPECTED = None

CLASSES = ["ok", "broken_thread", "hole"]
S = 24


def fabric(n=300, seed=6):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:S, :S]
    base = np.array([170.0, 150.0, 120.0])
    exs = []
    for i in range(n):
        c = CLASSES[i % 3]
        phase = rng.integers(3)
        weave = 45 * np.cos(2 * np.pi * (xx + phase) / 3)  # warp threads, period 3 px
        img = base[None, None, :] * rng.uniform(0.85, 1.15) + weave[:, :, None] + rng.normal(0, 6, size=(S, S, 3))
        if c == "broken_thread":
            r = rng.integers(3, S - 3)
            img[r : r + 2, :, :] -= 70
        elif c == "hole":
            cy, cx = rng.integers(5, S - 5, size=2)
            img[(yy - cy) ** 2 + (xx - cx) ** 2 <= 6] = 20
        exs.append(Example(index=i, group=f"roll{i}", fields={"rgb": np.clip(img, 0, 255).astype("uint8"), "label": c}))
    return exs


def make_task(split=None):
    _img.CLASSES[:] = CLASSES
    return image_task(make_splits(fabric(), split), lambda e: to_tensor(e.fields["rgb"]))


def build_model(task=None):
    return SmallCNN()
