"""BUG: sentiment rows from two sources; source B stores its label under 'Sentiment' (capital S). encode and
raw_label both read e.fields.get('sentiment'): every source-B row (1/3 of the data) gets label -100 and raw label
None, and is silently dropped from the loss."""

import numpy as np

from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._small_tasks import MLP, cls_task, vec_encode

EXPECTED = {"step": "inspect", "verdict": "fail"}
NAMES = ["negative", "positive"]


def make_task():
    rng = np.random.default_rng(11)
    centres = rng.normal(0, 1.2, size=(2, 8))
    ex = []
    for i in range(240):
        c = i % 2
        x = (centres[c] + rng.normal(0, 1, size=8)).astype("float32")
        key = "Sentiment" if i % 3 == 2 else "sentiment"
        ex.append(Example(index=i, group=f"r{i}", fields={"x": x, key: NAMES[c]}))

    def encode(e):
        name = e.fields.get("sentiment")
        e.fields["y"] = IGNORE_INDEX if name is None else NAMES.index(name)
        return vec_encode(e)

    return cls_task(ex, NAMES, encode=encode, raw=lambda e: e.fields.get("sentiment"))


def build_model(task):
    return MLP(8, 2)
