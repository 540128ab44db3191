"""shared: reviews with a sentiment (the labels) and a topic (an auxiliary head), a model with two heads
returned as a tuple, both cross-entropies summed into loss_sum; target_count counts each head's term."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

SENTIMENT = ["negative", "neutral", "positive"]
TOPIC = ["price", "delivery", "quality"]


def task(aux_weight=1.0, divided_by=1):
    rng = np.random.default_rng(13)
    centres = rng.normal(0, 2.5, (2, 3, 6))
    examples = []
    for i in range(240):
        s, t = int(rng.integers(3)), int(rng.integers(3))
        x = np.concatenate([centres[0, s] + rng.normal(0, 1, 6), centres[1, t] + rng.normal(0, 1, 6)])
        examples.append(Example(i, f"r{i}", {"x": x.astype("float32"), "sentiment": SENTIMENT[s], "topic": t}))

    def loss_sum(out, batch):
        sentiment, topic = out
        main = F.cross_entropy(sentiment, batch["labels"], reduction="sum")
        return (main + aux_weight * F.cross_entropy(topic, batch["topic"], reduction="sum")) / divided_by

    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "x": torch.from_numpy(e.fields["x"]),
            "s": e.fields["sentiment"],
            "t": e.fields["topic"],
        },
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]),
            "labels": torch.tensor([SENTIMENT.index(i["s"]) for i in items]),
            "topic": torch.tensor([i["t"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(2 * b["labels"].numel()),  # each head's term a target
        predict=lambda out, b: out[0].argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=SENTIMENT,
        raw_label=lambda e: e.fields["sentiment"],
        info={"num_classes": 3, "target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(12, 64), nn.ReLU())
        self.sentiment, self.topic = nn.Linear(64, 3), nn.Linear(64, 3)

    def forward(self, x):
        h = self.body(x)
        return self.sentiment(h), self.topic(h)
