"""correct: scanned-page thumbnails (8x8, inverted so ink=1, paper=0) sorted into blank / text / photo
pages before OCR; a blank page is genuinely near zero everywhere (only scanner noise), which IS the
evidence of the class: no preprocessing differs between classes."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import image_task, mlp

EXPECTED = None
CLASSES = ["blank", "text", "photo"]


def page(kind, rng):
    img = np.abs(rng.normal(0, 0.012, (8, 8)))  # scanner noise on white paper (inverted)
    if kind == 1:  # lines of text
        for r in range(1, 8, 2):
            n = rng.integers(4, 8)
            img[r, 1 : 1 + n] += rng.uniform(0.6, 1.0, n)
    elif kind == 2:  # a photo: a smooth blob of mid tones
        cy, cx = rng.uniform(2, 6, 2)
        yy, xx = np.mgrid[:8, :8]
        img += rng.uniform(0.4, 0.9) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / rng.uniform(3, 8))
    return np.clip(img, 0, 1).astype("float32")


def make_task():
    rng = np.random.default_rng(3)
    ex = [Example(index=i, group=f"scan{i}", fields={"pixels": page(i % 3, rng), "y": i % 3}) for i in range(210)]
    return image_task(ex, 3, CLASSES)[0]


def build_model(task):
    return mlp(64, 3)
