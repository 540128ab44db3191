"""correct: 3-day-ahead forecast, window s[t-11:t+1] -> targets s[t+1:t+4], stats from the train part only, time split."""

from tests.planted_tasks._forecast_windows import GRUHorizon, horizon_task

EXPECTED = None
SETTINGS = {"split_by": "time"}


def make_task():
    return horizon_task(lambda s, t: s[t + 1 : t + 4])


def build_model(task):
    return GRUHorizon()
