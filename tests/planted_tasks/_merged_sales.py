"""shared: weekly sales of a store (regression) from 4 continuous measurements of the week, then merged
with a store table holding ``rows_per_store`` rows per store (two managers over the year: another staff
count and floor area), one merged row per (sale, store row); split by merged row."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task


def sales_task(rows_per_store):
    rng = np.random.default_rng(17)
    stores = [
        [(float(rng.integers(5, 40)), float(rng.uniform(200, 900))) for _ in range(rows_per_store)] for _ in range(30)
    ]
    examples = []
    for _ in range(240):
        store = int(rng.integers(30))
        week = rng.normal(size=4)
        y = float(week @ [1.0, -0.5, 0.3, 0.2] + 0.1 * rng.normal())
        for staff, area in stores[store]:  # the merge: one row per store row, the sale's label copied
            x = np.concatenate([week, [staff / 40, area / 900, store / 30]]).astype("float32")
            examples.append(Example(index=len(examples), group=f"row{len(examples)}", fields={"x": x, "y": y}))
    return vector_task(examples, "group")


def build_model(task):
    return mlp(7, 1)
