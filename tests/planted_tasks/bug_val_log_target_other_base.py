"""regression: the training frame's target is np.log(price); validation and test were prepared by a
second script with np.log10(price). Same inputs, targets 0.43x as large: every validation loss and
the model chosen on it are wrong, while the training loss falls as it should."""

import numpy as np

from tests.planted_tasks._log_prices import build_model, log_price_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "moved while its inputs did not"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return log_price_task(np.log10)
