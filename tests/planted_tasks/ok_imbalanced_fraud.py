"""correct: a legitimately imbalanced binary task (fraud ~6% of transactions), plain unweighted cross-entropy,
split by card; every split holds both classes."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._common import FEATURES, MLP, classification_task

EXPECTED = None
NAMES = ["legit", "fraud"]


def examples(count=300, seed=2):
    rng = np.random.default_rng(seed)
    shift = rng.normal(0, 1.2, size=FEATURES)
    out = []
    for i in range(count):
        fraud = (i % 16) == 0 or rng.random() < 0.01
        x = (rng.normal(0, 1, size=FEATURES) + (shift if fraud else 0)).astype("float32")
        out.append(Example(index=i, group=f"card{i}", fields={"x": x, "animal": NAMES[int(fraud)]}))
    return out


def make_task():
    from tests.planted_tasks._common import name_encoder

    return classification_task(
        examples(),
        encode=name_encoder(NAMES),
        class_names=list(NAMES),
        info={"num_classes": 2, "target_unit": "example"},
    )


def build_model(task):
    return MLP(classes=2)
