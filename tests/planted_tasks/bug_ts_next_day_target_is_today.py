"""next-day forecast whose target is s[t] (meant s[t+1]): the label is the last value of the input window
(horizon label shifted by one step). Vector [1] target, GRU over the window."""

import torch.nn as nn

from tests.planted_tasks._forecast_windows import GRUHorizon, horizon_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "is a linear function of the inputs"}
SETTINGS = {"split_by": "time"}


def make_task():
    return horizon_task(lambda s, t: s[t : t + 1])  # BUG: s[t] is today's value, already in the window


def build_model(task):
    m = GRUHorizon()
    m.head = nn.Linear(16, 1)
    return m
