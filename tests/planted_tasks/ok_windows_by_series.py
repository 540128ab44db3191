"""correct: 12 independent stores' daily sales, stride-1 windows within each store, split by store (group)."""

from pilot.data.task import Example
from tests.planted_tasks._series import L, series
from tests.planted_tasks._windows import GRU, window_regression

EXPECTED = None


def make_task():
    ex = []
    for store in range(12):
        s = series(36, seed=store + 1)
        for t in range(L, len(s) - 1):
            ex.append(
                Example(
                    index=len(ex),
                    group=f"store{store}",
                    fields={"window": (s[t + 1 - L : t + 1] - 50) / 10, "y": (s[t + 1] - 50) / 10},
                )
            )
    return window_regression(ex, by="group", val=0.25)


def build_model(task):
    return GRU()
