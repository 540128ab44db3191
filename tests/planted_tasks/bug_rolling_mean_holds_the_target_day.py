"""A daily demand forecast whose 7-day rolling mean and standard deviation include the day to forecast (pandas
``rolling(7)`` without ``.shift(1)``): with the lags of the examples before it, the mean gives the target exactly,
though no linear map of one example's inputs does (an outside examination's miss, 2026-12-06: validation R^2
0.65 against 0.58 with the window shifted)."""

from tests.planted_tasks import _daily_demand
from tests.planted_tasks._daily_demand import build_model

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "carries its target inside a window"}
SETTINGS = {"split_by": "time"}
__all__ = ["EXPECTED", "SETTINGS", "build_model", "make_task"]


def make_task():
    return _daily_demand.make_task(today_in_window=True)
