"""correct: stride-1 next-day windows (12 days), split by time, and the first 12 validation windows dropped
(a gap so no validation window shares a day with training)."""

from pilot.data.task import Example
from tests.planted_tasks._series import L, series
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = None
SETTINGS = {"split_by": "time"}


def make_task():
    s = series(240)
    ex = [
        Example(
            index=i,
            group=f"d{t}",
            time=float(t),
            fields={"window": (s[t + 1 - L : t + 1] - 50) / 10, "y": (s[t + 1] - 50) / 10},
        )
        for i, t in enumerate(range(L, 239))
    ]
    task = window_regression(ex, by="time")
    task.splits["val"] = task.splits["val"][L:]
    return task


def build_model(task):
    return GRU()
