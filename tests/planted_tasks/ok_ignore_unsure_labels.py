"""correct: 2-class review sentiment where 20% of rows were marked 'unsure' by the annotator: kept as examples (their
features still go through the model) but labelled -100 and left out of the loss on purpose; raw_label None for them."""

import numpy as np

from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = None
NAMES = ["negative", "positive"]


def make_task():
    rng = np.random.default_rng(11)
    centres = rng.normal(0, 1.2, size=(2, 8))
    ex = []
    for i in range(240):
        c = i % 2
        x = (centres[c] + rng.normal(0, 1, size=8)).astype("float32")
        unsure = (i % 5) == 4
        ex.append(
            Example(
                index=i,
                group=f"r{i}",
                fields={
                    "x": x,
                    "y": IGNORE_INDEX if unsure else c,
                    "name": None if unsure else NAMES[c],
                    "annotator": "unsure" if unsure else "sure",
                },
            )
        )
    return cls_task(ex, NAMES)


def build_model(task):
    return MLP(8, 2)
