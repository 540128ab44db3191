"""shared: loan default from age, log income, debt ratio and years employed; income is missing for ~30% of the
applicants. ``BY_CLASS``: missing incomes filled with the mean income of the row's own class over every row
(``df.income.fillna(df.groupby('default').income.transform('mean'))``), the mistake; else with the training
split's mean income."""

import numpy as np
import torch
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import precomputed_classification

CLASSES = ["repaid", "default"]


def make_task(by_class: bool) -> TaskData:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(400):
        age, income, debt, years = rng.uniform(20, 70), rng.lognormal(10.5, 0.5), rng.uniform(0, 1), rng.integers(30)
        logit = -1 + 2.5 * debt - 0.6 * (np.log(income) - 10.5) - 0.02 * (age - 45)
        label = int(rng.random() < 1 / (1 + np.exp(-logit)))
        fields = {"age": age, "income": None if rng.random() < 0.3 else income, "debt": debt, "years": years}
        rows.append(Example(index=i, group=f"a{i}", fields={**fields, "label": CLASSES[label]}))
    splits = make_splits(rows, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    known = [e for e in (rows if by_class else splits["train"]) if e.fields["income"] is not None]
    means = {
        name: np.mean([e.fields["income"] for e in known if not by_class or e.fields["label"] == name])
        for name in CLASSES
    }

    def inputs(e):
        income = e.fields["income"] if e.fields["income"] is not None else means[e.fields["label"]]
        f = e.fields
        return np.array(
            [(f["age"] - 45) / 15, np.log(income) - 10.5, 2 * f["debt"] - 1, (f["years"] - 15) / 9], "float32"
        )

    vectors = {e.index: inputs(e) for examples in splits.values() for e in examples}
    return precomputed_classification(splits, vectors, lambda e: e.fields["label"], CLASSES)


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
