"""shared: card-fraud classification from log amount, log distance from home, hour (sin, cos) and the merchant's fraud rate, a smoothed
target encoding ``(frauds + 2 * prior) / (transactions + 2)`` of the merchant field. ``OVER_EVERY_SPLIT``: the
rates counted over every row before the split (validation's labels included), the mistake; else over the
training split's rows, applied to every split."""

import numpy as np
import torch
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import precomputed_classification, words

CLASSES = ["legit", "fraud"]


def make_task(over_every_split: bool) -> TaskData:
    rng = np.random.default_rng(2)
    risk, names = rng.beta(1, 4, 90), words(90, seed=3)  # merchants by name ("Tolomi Foods"), not by id
    examples = []
    for i in range(360):
        merchant, amount, hour = int(rng.integers(90)), rng.lognormal(3, 1), int(rng.integers(24))
        distance = rng.lognormal(2, 1)
        fraud = rng.random() < min(0.7 * risk[merchant] + 0.3 * (hour < 5) + 0.1 * (amount > 60), 0.95)
        fields = {
            "merchant": names[merchant].capitalize() + " Foods",
            "amount": amount,
            "hour": hour,
            "distance": distance,
            "label": CLASSES[int(fraud)],
        }
        examples.append(Example(index=i, group=f"cust{int(rng.integers(150))}", fields=fields))
    splits = make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    counted = [e for s in splits.values() for e in s] if over_every_split else splits["train"]
    frauds, seen = {}, {}
    for e in counted:
        frauds[e.fields["merchant"]] = frauds.get(e.fields["merchant"], 0) + CLASSES.index(e.fields["label"])
        seen[e.fields["merchant"]] = seen.get(e.fields["merchant"], 0) + 1
    prior = np.mean([CLASSES.index(e.fields["label"]) for e in splits["train"]])

    def inputs(e):
        rate = (frauds.get(e.fields["merchant"], 0) + 2 * prior) / (seen.get(e.fields["merchant"], 0) + 2)
        turn = 2 * np.pi * e.fields["hour"] / 24
        numbers = [np.log(e.fields["amount"]) - 3, np.log(e.fields["distance"]) - 2, np.sin(turn), np.cos(turn)]
        return np.array([*numbers, (rate - prior) * 4], "float32")

    vectors = {e.index: inputs(e) for examples in splits.values() for e in examples}
    return precomputed_classification(splits, vectors, lambda e: e.fields["label"], CLASSES)


def build_model(task):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 2))
