"""correct: next-day forecasting with a GRU over the last 12 days (series[t-11 : t+1] -> series[t+1]), scaled with
fixed constants, split by time."""

from tests.planted_tasks._series import GRUForecaster, L, window_task

EXPECTED = None
SETTINGS = {"split_by": "time"}


def make_task():
    return window_task(lambda s, t: s[t + 1 - L : t + 1], lambda s, t: s[t + 1])


def build_model(task):
    return GRUForecaster()
