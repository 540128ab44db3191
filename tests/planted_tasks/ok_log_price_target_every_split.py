"""correct: the log of the price (np.log) as the regression target of every split."""

import numpy as np

from tests.planted_tasks._log_prices import build_model, log_price_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return log_price_task(np.log)
