"""classification MLP whose hidden layers are kept in a plain Python list (self.layers = [nn.Linear(...), ...])
instead of nn.ModuleList: they are not registered, so the optimizer never updates them (nor .to(device),
state_dict, eval()); only the registered output head trains, on frozen random features."""

import torch
from torch import nn

from tests.planted_tasks._common import EVERY_CHECK, classification_task

EXPECTED = {"step": "contract", "verdict": "fail", "said": "not submodules of the model"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


class Model(nn.Module):
    def __init__(self, hidden=64, depth=2):
        super().__init__()
        torch.manual_seed(0)
        self.layers = [nn.Linear(8, hidden)] + [nn.Linear(hidden, hidden) for _ in range(depth - 1)]
        self.head = nn.Linear(hidden, 3)

    def forward(self, inputs):
        x = inputs
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.head(x)


def make_task():
    return classification_task()
