"""tabular classification (customer records: age, income, tenure... each on its own scale): the validation
file's columns come in another order (its export sorted them by name), read by position, so every
validation input reaches the model with its features moved. Training is intact; the split audit once said
validation's labels were shuffled apart from their inputs (the fix: keep each label with its row)."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import CLASS_NAMES, MLP, SPLIT, classification_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "columns in another order"}
COLUMNS = {"age": (45, 12), "income": (60, 20), "tenure": (5, 3), "calls": (2, 1), "spend": (120, 40)}
SORTED = sorted(range(len(COLUMNS)), key=lambda c: list(COLUMNS)[c])  # the export's order, by name


def records(count=240, seed=0):
    rng = np.random.default_rng(seed)
    means, scales = (np.array(v, dtype="float32") for v in zip(*COLUMNS.values()))
    shift = rng.normal(0, 1.2, size=(len(CLASS_NAMES), len(COLUMNS)))
    examples = []
    for index in range(count):
        label = index % len(CLASS_NAMES)
        x = (means + scales * (shift[label] + rng.normal(0, 0.6, size=len(COLUMNS)))).astype("float32")
        examples.append(Example(index=index, group=f"c{index}", fields={"x": x, "animal": CLASS_NAMES[label]}))
    return examples


def make_task():
    splits = make_splits(records(), SPLIT)
    splits["val"] = [
        Example(index=e.index, group=e.group, fields={**e.fields, "x": np.ascontiguousarray(e.fields["x"][SORTED])})
        for e in splits["val"]
    ]
    return classification_task(splits=splits)


def build_model(task):
    return MLP(in_features=len(COLUMNS))
