"""one-score binary classifier whose forward ends in a sigmoid while loss_sum is
binary_cross_entropy_with_logits (which applies the sigmoid itself): every output is held in [0, 1] and read
as a logit, so the loss can never favour class 0; predict's 0.5 is right for these outputs (an outside
examination, 2026-12-07: the objective blamed predict's threshold)."""

import torch

from tests.planted_tasks import bug_binary_logit_thresholded_at_half as base

EXPECTED = {"step": "objective", "verdict": "fail", "said": "a sigmoid in forward?"}


def make_task():
    return base.task(0.5)  # predict: the probability's threshold, right for what this forward returns


class Model(base.Model):
    def forward(self, inputs):
        return torch.sigmoid(self.net(inputs))  # the planted mistake: the loss applies the sigmoid again


def build_model(task):
    return Model()
