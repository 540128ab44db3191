"""correct: myocardial infarction from a troponin assay (log) and three numbers; values under the assay's limit
of detection are stored at 0.01 and over its upper limit at 50, as lab exports do, so the healthy pile up at one
limit and the infarcts at the other: an examination's false alarm of the per-class fill check (2026-12-06), kept
as a guard."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import precomputed_classification
from tests.planted_tasks._exam107 import mlp

EXPECTED = None
CLASSES = ["no_mi", "mi"]
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    rng = np.random.default_rng(11)
    rows = []
    for i in range(600):
        mi = int(rng.random() < 0.35)
        troponin = min(max(float(np.exp(rng.normal(2.0, 1.8) if mi else rng.normal(-4.0, 1.5))), 0.01), 50.0)
        age, sbp, ck = rng.normal(60 + 5 * mi, 10), rng.normal(135, 20), rng.lognormal(4 + 0.8 * mi, 0.6)
        fields = {"troponin": troponin, "age": age, "sbp": sbp, "ck": ck, "label": CLASSES[mi]}
        rows.append(Example(index=i, group=f"p{i}", fields=fields))
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.1})
    inputs = {
        e.index: np.array(
            [
                np.log(e.fields["troponin"]),
                (e.fields["age"] - 60) / 10,
                (e.fields["sbp"] - 135) / 20,
                np.log(e.fields["ck"]) - 4,
            ],
            "float32",
        )
        for e in rows
    }
    return precomputed_classification(splits, inputs, lambda e: e.fields["label"], CLASSES)


def build_model(task):
    return mlp(4, 2)
