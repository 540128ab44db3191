"""forward passes the whole batch to the model (model(**batch)) and the model, written for a conditional
variant, embeds `labels` into its input: the prediction is read from the answer."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import CLASS_NAMES, FEATURES, classification_task

EXPECTED = {"step": "inspect", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective"]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.label_embed = nn.Embedding(len(CLASS_NAMES), 8)
        self.net = nn.Sequential(nn.Linear(FEATURES + 8, 32), nn.ReLU(), nn.Linear(32, len(CLASS_NAMES)))

    def forward(self, inputs, labels=None, index=None):
        cond = self.label_embed(labels) if labels is not None else torch.zeros(inputs.shape[0], 8)
        return self.net(torch.cat([inputs, cond], -1))  # the bug: labels are an input


def make_task():
    return classification_task(forward=lambda model, batch: model(**batch))
