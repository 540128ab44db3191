"""forward standardises features with the micro-batch's own std: a batch of one gives NaN."""

import warnings

import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "smallest_micro_batch", "verdict": "fail"}
SETTINGS = {"micro_batch": 4, "accumulation": 4}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, len(CLASS_NAMES)))

    def forward(self, inputs):
        with warnings.catch_warnings():  # torch warns of the one-example std it is about to divide by
            warnings.simplefilter("ignore", UserWarning)
            inputs = (inputs - inputs.mean(dim=0)) / inputs.std(dim=0)  # the bug: batch statistics
        return self.net(inputs)


def make_task():
    task = classification_task()
    train = task.splits["train"]
    task.splits["train"] = train[: (len(train) // 16) * 16 + 1]  # one example left over per epoch
    return task
