"""shared: house prices from 6 standardised features, the target the log of the price (in thousands of $), computed
for validation and test by ``other_log`` (a second preparation script)."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task


def log_price_task(other_log):
    rng = np.random.default_rng(5)
    w = rng.normal(size=6)
    w /= np.linalg.norm(w)
    examples = []
    for i in range(400):
        x = rng.normal(size=6).astype("float32")
        price = float(np.exp(np.log(250) + 0.9 * (x @ w) + 0.2 * rng.normal()))
        examples.append(Example(index=i, group=f"street{i // 2}", fields={"x": x, "price": price}))
    task = vector_task(examples, "group")
    for name, examples in task.splits.items():
        for e in examples:
            e.fields["y"] = float(np.log(e.fields["price"]) if name == "train" else other_log(e.fields["price"]))
    return task


def build_model(task):
    return mlp(6, 1)
