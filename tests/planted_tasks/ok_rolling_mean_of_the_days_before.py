"""correct: a daily demand forecast whose 7-day rolling statistics cover the seven days before the day to
forecast (``rolling(7).shift(1)``)."""

from tests.planted_tasks import _daily_demand
from tests.planted_tasks._daily_demand import build_model

EXPECTED = None
SETTINGS = {"split_by": "time"}
__all__ = ["EXPECTED", "SETTINGS", "build_model", "make_task"]


def make_task():
    return _daily_demand.make_task(today_in_window=False)
