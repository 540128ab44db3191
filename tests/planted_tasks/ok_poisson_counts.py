"""correct: count regression (store visits per hour, 0-20) with a log-rate output and PoissonNLLLoss(log_input=True,
reduction='sum'); predict = exp(rate)."""

import torch.nn.functional as F

from tests.planted_tasks._poisson_counts import build_model, counts_task

EXPECTED = None
__all__ = ["build_model"]


def make_task():
    return counts_task(
        lambda out, b: F.poisson_nll_loss(
            out.squeeze(-1).float(), b["labels"], log_input=True, full=True, reduction="sum"
        )
    )
