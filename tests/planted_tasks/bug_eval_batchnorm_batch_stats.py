"""tabular classifier with nn.BatchNorm1d(track_running_stats=False) (copied from a recipe 'to avoid stale running
stats'): in eval mode it still normalises with the CURRENT batch's statistics, so an example's validation
prediction depends on which other examples share its evaluation batch (deterministic for one batch, but not
a function of the example). Sizes chosen so no batch of one ever occurs."""

import torch
from torch import nn

from tests.planted_tasks._common import classification_task, vector_examples

EXPECTED = {"step": "eval_determinism", "verdict": "fail"}
SETTINGS = {"micro_batch": 4, "eval_micro_batch": 4}


def make_task():
    task = classification_task(examples=vector_examples(count=240))
    # trim splits to multiples of 4 so no micro-batch of one example occurs
    for name, part in task.splits.items():
        task.splits[name] = part[: len(part) - len(part) % 4]
    return task


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(
            nn.Linear(8, 32), nn.BatchNorm1d(32, track_running_stats=False), nn.ReLU(), nn.Linear(32, 3)
        )

    def forward(self, inputs):
        return self.net(inputs)
