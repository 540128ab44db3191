"""shared: churn of three kinds (stayed, downgraded, left) from five numbers, split by customer. ``SORTED_VALIDATION``:
validation's feature rows come back from a merge sorted on one column while each example keeps its label in the
old order (labels and features joined by position, not by key), the mistake; else paired as read."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import precomputed_classification

CLASSES = ["stayed", "downgraded", "left"]


def make_task(sorted_validation: bool) -> TaskData:
    rng = np.random.default_rng(11)
    rows = []
    for i in range(300):
        x = rng.normal(size=5).astype("float32")
        logits = np.array([0.0, 1.5 * x[0] - x[1], 1.2 * x[2] + 0.5 * x[3]])
        label = CLASSES[int(rng.choice(3, p=np.exp(logits) / np.exp(logits).sum()))]
        rows.append(Example(index=i, group=f"c{i}", fields={"x": x, "label": label}))
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    inputs = {e.index: e.fields["x"] for e in rows}
    if sorted_validation:  # the merge's rows, in the order of column 4, given to the examples in their order
        merged = sorted((e.fields["x"] for e in splits["val"]), key=lambda x: float(x[4]))
        inputs.update({e.index: x for e, x in zip(splits["val"], merged)})
    return precomputed_classification(splits, inputs, lambda e: e.fields["label"], CLASSES)
