"""correct twin of bug_regression_relu_head_standardised_targets: the targets are the scores over their
standard deviation, not centred (every one >= 0), so a ReLU at the end of forward bounds nothing they need."""

import torch
import torch.nn as nn

from tests.planted_tasks._bounded_regression import EVERY_CHECK, examples, task

EXPECTED = None
SETTINGS = EVERY_CHECK
SCORES = torch.tensor([e.fields["score"] for e in examples()])


def make_task():
    return task(scale=float(SCORES.std()))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1), nn.ReLU())
        nn.init.constant_(self.net[2].bias, 1.0)  # alive at the start: every output above 0

    def forward(self, x):
        return self.net(x).squeeze(-1)
