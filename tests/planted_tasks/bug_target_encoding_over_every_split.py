"""A merchant's fraud rate (a smoothed target encoding) counted over every row before the split: validation's
own labels are in its inputs (an outside examination's miss, 2026-12-06: validation accuracy 0.85 against 0.76
with the rate counted on training)."""

from tests.planted_tasks import _merchant_rates
from tests.planted_tasks._merchant_rates import build_model

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "mean of the label computed over every split"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _merchant_rates.make_task(over_every_split=True)
