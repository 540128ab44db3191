"""correct: frame classification silence / speech / music from 64 raw audio samples. Silence frames are the
recording's noise floor at -40 dBFS (peak ~0.005) while speech/music peak ~0.5: silence is legitimately ~100x
quieter, and loudness IS the evidence."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = None
CLASSES = ["silence", "speech", "music"]


def frame(c, rng, floor=0.005):
    t = np.arange(64)
    if c == 0:
        s = rng.normal(0, 1, 64)
        s = s / np.abs(s).max() * floor * rng.uniform(0.9, 1.1)
    elif c == 1:
        f = rng.uniform(0.05, 0.15)
        s = np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) * np.hanning(64) + 0.2 * rng.normal(size=64)
        s = s / np.abs(s).max() * 0.5 * rng.uniform(0.9, 1.1)
    else:
        s = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) for f in (0.1, 0.2, 0.3)) + 0.05 * rng.normal(size=64)
        s = s / np.abs(s).max() * 0.5 * rng.uniform(0.9, 1.1)
    return s.astype("float32")


def make_task(floor: float = 0.005):
    rng = np.random.default_rng(2)
    ex = [
        Example(index=i, group=f"clip{i // 2}", fields={"x": frame(i % 3, rng, floor), "y": i % 3}) for i in range(240)
    ]
    t = vector_task(ex, "group", classes=3)
    t.class_names = list(CLASSES)
    t.raw_label = lambda e: CLASSES[e.fields["y"]]
    return t


def build_model(task):
    return mlp(64, 3)
