"""next-day forecasting with a 'stateful' GRU (a Keras habit): the final hidden state of each forward is kept in
self.state (detached) and used as the initial state of the next call: predictions depend on whichever batch ran
before (evaluation is not repeatable, and validation carries state from training)."""

import torch
from torch import nn

from tests.planted_tasks._series import L, window_task

EXPECTED = {"step": "eval_determinism", "verdict": "fail", "said": "changes the model's state"}
SETTINGS = {"split_by": "time"}


class StatefulGRU(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(1, 16, batch_first=True)
        self.head = nn.Linear(16, 1)
        self.state = None

    def forward(self, x):
        h0 = None
        if self.state is not None and self.state.shape[1] == x.shape[0]:
            h0 = self.state
        h, last = self.gru(x, h0)
        self.state = last.detach()
        return self.head(h[:, -1]).squeeze(-1)


def make_task():
    return window_task(lambda s, t: s[t + 1 - L : t + 1], lambda s, t: s[t + 1])


def build_model(task):
    return StatefulGRU()
