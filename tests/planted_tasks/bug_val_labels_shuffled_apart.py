"""classification: the validation rows are read from their own file and shuffled (df.sample(frac=1)) after
the label column was taken out as an array: each validation input carries another row's label. Training is
intact, so every check of the loop passed, and every number measured on validation is chance."""

import numpy as np

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import SPLIT, classification_task, mlp, vector_examples

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "labels do not follow its inputs"}


def make_task():
    splits = make_splits(vector_examples(240), SPLIT)
    val = splits["val"]
    labels = [example.fields["animal"] for example in val]
    order = np.random.default_rng(3).permutation(len(val))
    splits["val"] = [
        Example(index=val[k].index, group=val[k].group, fields={**val[k].fields, "animal": labels[j]})
        for j, k in enumerate(order)
    ]
    return classification_task(splits=splits)


build_model = mlp
