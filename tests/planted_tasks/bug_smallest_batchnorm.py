"""BatchNorm1d in the model and a training split that leaves one example in the last micro-batch."""

import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task, vector_examples

EXPECTED = {"step": "smallest_micro_batch", "verdict": "fail"}
SETTINGS = {"micro_batch": 4, "accumulation": 2}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(FEATURES, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, len(CLASS_NAMES))
        )

    def forward(self, inputs):
        return self.net(inputs)


def make_task():
    task = classification_task(vector_examples(count=180))
    train = task.splits["train"]
    task.splits["train"] = train[: len(train) - (len(train) % 8) + 1] if len(train) % 8 != 1 else train
    return task
