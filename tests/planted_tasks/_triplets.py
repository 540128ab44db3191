"""shared: product search triplets: a query vector, its clicked product (positive) and a product shown and
not clicked (negative), embedded by a two-tower model into one [B, 3, D] output; the label of every row is
candidate 0 (the positive), and predict picks the nearer candidate."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

D = 12


def triplet_task(loss_sum):
    rng = np.random.default_rng(9)
    mix, products = rng.normal(size=(D, D)) / np.sqrt(D), rng.normal(size=(200, D))
    examples = []
    for i in range(240):
        positive, negative = (int(k) for k in rng.choice(200, 2, replace=False))
        query = products[positive] @ mix.T + 0.3 * rng.normal(size=D)
        triplet = np.stack([query, products[positive], products[negative]]).astype("float32")
        examples.append(Example(index=i, group=f"q{i}", fields={"triplet": triplet}))

    def predict(out, b):
        distances = torch.stack([F.pairwise_distance(out[:, 0], out[:, k]) for k in (1, 2)], 1)
        return distances.argmin(1)

    return TaskData(
        kind="ranking",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "x": torch.from_numpy(e.fields["triplet"])},
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.zeros(len(items), dtype=torch.long),  # candidate 0, the positive, is right
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=predict,
        forward=lambda m, b: m(b["inputs"]),
        initial_loss_tolerance=None,
        info={"target_unit": "example"},
    )


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.query = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 32))
        self.product = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, x):  # [B, 3, D]: query, positive, negative
        return torch.stack([self.query(x[:, 0]), self.product(x[:, 1]), self.product(x[:, 2])], 1)


def build_model(task):
    return TwoTower()
