"""count regression (visits per hour) whose model outputs a log-rate, trained with PoissonNLLLoss(log_input=False),
which reads its input as the rate itself and takes its log: a negative output gives NaN, and the pilot said the
loss was NaN without naming why (an outside examination)."""

import torch.nn as nn

from tests.planted_tasks._poisson_counts import build_model, counts_task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "log_input=True"}
__all__ = ["build_model"]

POISSON = nn.PoissonNLLLoss(log_input=False, reduction="sum")  # the bug: the output is a log-rate


def make_task():
    return counts_task(lambda out, b: POISSON(out.squeeze(-1).float(), b["labels"]))
