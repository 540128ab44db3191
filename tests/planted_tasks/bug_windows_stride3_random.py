"""bug: 12-day windows cut every 3 days, each its own group, split at random (val windows share 9 days with a
train window on each side)."""

from pilot.data.task import Example
from tests.planted_tasks._series import L, series
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}


def make_task():
    s = series(600)
    ex = [
        Example(index=i, group=f"w{t}", fields={"window": (s[t + 1 - L : t + 1] - 50) / 10, "y": (s[t + 1] - 50) / 10})
        for i, t in enumerate(range(L, 599, 3))
    ]
    return window_regression(ex, by="group")


def build_model(task):
    return GRU()
