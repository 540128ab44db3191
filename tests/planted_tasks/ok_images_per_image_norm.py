"""correct: 8x8 grey images (horizontal bar / vertical bar / blob, random position, brightness and
contrast per capture) flattened to 64 features, EACH IMAGE standardised by its own mean and sd; several
captures per subject, split by subject."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None


def image(kind, rng):
    img = np.zeros((8, 8))
    k = int(rng.integers(1, 7))
    if kind == 0:
        img[k, 1:7] = 1
    elif kind == 1:
        img[1:7, k] = 1
    else:
        img[k - 1 : k + 2, 2:5] = 1
    img = rng.uniform(0.2, 3.0) * img + rng.uniform(0, 50) + rng.normal(0, 0.1, (8, 8))
    return img


def examples():
    rng = np.random.default_rng(13)
    out = []
    for s in range(60):
        for _c in range(4):
            kind = int(rng.integers(3))
            img = image(kind, rng).reshape(-1)
            x = ((img - img.mean()) / img.std()).astype("float32")
            out.append(Example(index=len(out), group=f"subj{s}", fields={"x": x, "y": kind}))
    return out


def make_task():
    return vector_task(examples(), "group", classes=3)


def build_model(task):
    return mlp(64, 3)
