"""The window of a forecast ends one step past the target: its last input is the reading *after* the one it
predicts (``series[k - 5 : k + 2]`` with the target ``series[k]`` cut out), which the forecast will never have.
An earlier example holds each label as an input: the future, not the series' own persistence."""

import numpy as np

from tests.planted_tasks._ar_readings import LAGS, forecast_task
from tests.planted_tasks._windows import GRU

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "gives the label away"}


def make_task():
    return forecast_task(lambda series, k: np.concatenate([series[k - LAGS + 1 : k], series[k + 1 : k + 2]]))


def build_model(task):
    return GRU()
