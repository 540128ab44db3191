"""correct: machine-failure prediction from (hours since last service, temperature, vibration); 'hours since
service' is a monotone counter within each machine's log and legitimately drives the risk; split by machine."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._common import MLP, classification_task, name_encoder

EXPECTED = None
NAMES = ["ok", "fails_soon"]


def examples(machines=30, readings=8, seed=4):
    rng = np.random.default_rng(seed)
    out = []
    for m in range(machines):
        wear = rng.uniform(0.5, 1.5)
        for r in range(readings):
            hours = 50.0 * r + rng.uniform(0, 10)
            temp = 60 + 0.02 * hours * wear + rng.normal(0, 3)
            vib = rng.normal(1, 0.3) + 0.001 * hours
            risk = 0.006 * hours * wear + 0.05 * (temp - 60) + rng.normal(0, 0.6)
            x = np.array([hours / 100, (temp - 60) / 5, vib], dtype="float32")
            out.append(Example(len(out), f"machine{m}", {"x": x, "animal": NAMES[int(risk > 1.3)]}))
    return out


def make_task():
    return classification_task(
        examples(),
        encode=name_encoder(NAMES),
        class_names=list(NAMES),
        info={"num_classes": 2, "target_unit": "example"},
    )


def build_model(task):
    return MLP(in_features=3, classes=2)
