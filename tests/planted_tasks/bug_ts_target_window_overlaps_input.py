"""3-day-ahead forecast whose target window is s[t:t+3] (meant s[t+1:t+4]): the first 'future' value is the
last input value itself (target window overlaps the input window by one step)."""

from tests.planted_tasks._forecast_windows import GRUHorizon, horizon_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "target column 0 (of each example's vector of targets)"}
SETTINGS = {"split_by": "time"}


def make_task():
    return horizon_task(lambda s, t: s[t : t + 3])  # BUG: starts at t, which is in the window


def build_model(task):
    return GRUHorizon()
