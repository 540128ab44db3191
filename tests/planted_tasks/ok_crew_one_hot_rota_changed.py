"""correct: defect prediction on a production line, split by time; the crew one-hot fitted once on training's crews;
the records also carry the shift (a string the model never reads), paired one to one with the crew until the rota
rotated at the split date: the shift then marks other columns, the crew the same ones. An examination's false alarm
of the one-hot check (2026-12-06), kept as a guard."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import precomputed_classification
from tests.planted_tasks._exam107 import mlp

EXPECTED = None
SETTINGS = {"split_by": "time"}
CLASSES, CREWS, SHIFTS = ["ok", "defect"], ["A", "B", "C", "D"], ["morning", "day", "evening", "night"]
__all__ = ["EXPECTED", "SETTINGS", "build_model", "make_task"]


def make_task():
    rng = np.random.default_rng(3)
    rows = []
    for i in range(600):
        shift = int(rng.integers(4))
        crew = shift if i < 450 else (shift - 1) % 4  # the rota rotated after the split date
        hour, x = [7, 12, 17, 23][shift] + rng.uniform(0, 4), rng.normal(size=3)
        logit = 1.2 * x[0] - 0.8 * x[1] + [-0.5, 0.2, 0.0, 0.6][crew] + 0.3 * (shift == 3)
        label = CLASSES[int(rng.random() < 1 / (1 + np.exp(-logit)))]
        fields = {"shift": SHIFTS[shift], "crew": CREWS[crew], "x": x, "hour": hour, "label": label}
        rows.append(Example(index=i, group=f"r{i}", time=float(i), fields=fields))
    splits = make_splits(rows, {"by": "time", "val_fraction": 0.25, "test_fraction": 0.0})
    crews = sorted({e.fields["crew"] for e in splits["train"]})
    inputs = {}
    for e in rows:
        one_hot = np.zeros(len(crews), "float32")
        one_hot[crews.index(e.fields["crew"])] = 1
        inputs[e.index] = np.concatenate([e.fields["x"], [(e.fields["hour"] - 15) / 7], one_hot]).astype("float32")
    return precomputed_classification(splits, inputs, lambda e: e.fields["label"], CLASSES)


def build_model(task):
    return mlp(8, 2)
