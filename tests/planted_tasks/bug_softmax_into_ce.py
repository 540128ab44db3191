"""model ends in nn.Softmax (so that predict 'gives probabilities') and loss_sum applies F.cross_entropy
to those probabilities: log_softmax of values in [0, 1], the loss saturates near ln(classes) and barely moves."""

import torch.nn as nn

from tests.planted_tasks._common import EVERY_CHECK, MLP, classification_task

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "output rows are probabilities"}
SETTINGS = EVERY_CHECK


class ProbabilityMLP(MLP):
    def __init__(self):
        super().__init__()
        self.net.append(nn.Softmax(dim=-1))  # the bug: cross_entropy expects logits, gets probabilities


def make_task():
    return classification_task()


def build_model(task):
    return ProbabilityMLP()
