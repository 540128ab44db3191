"""shared: vibration clips (64 samples) of two machine states; ``amplitude``: a loose mount vibrates at 3x the
normal amplitude, at the same frequencies; else it vibrates at a higher frequency, at the same amplitude.
``per_clip``: encode standardises each clip by its own mean and standard deviation."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

NAMES = ["normal", "loose mount"]


def task(amplitude: bool, per_clip: bool):
    rng = np.random.default_rng(29)
    t = np.arange(64)
    examples = []
    for i in range(320):
        y = i % 2
        frequency = rng.uniform(0.05, 0.12) + (0.0 if amplitude or not y else 0.2)
        level = (3.0 if amplitude and y else 1.0) * rng.uniform(0.8, 1.25)
        signal = level * (np.sin(2 * np.pi * frequency * t + rng.uniform(0, 6.28)) + 0.3 * rng.normal(size=64))
        examples.append(Example(i, f"machine{i}", {"x": signal.astype("float32"), "y": y, "name": NAMES[y]}))

    def encode(e):
        x = e.fields["x"]
        x = (x - x.mean()) / (x.std() + 1e-6) if per_clip else x / 2.0
        return {
            "index": e.index,
            "inputs": torch.from_numpy(np.asarray(x, dtype="float32")),
            "label": torch.tensor(e.fields["y"]),
        }

    return cls_task(examples, NAMES, encode=encode)


def model():
    return MLP(d_in=64, d_out=2)
