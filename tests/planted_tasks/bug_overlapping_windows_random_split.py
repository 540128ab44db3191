"""overlapping windows split at random: next-day forecasting over the last 12 days, one window per day
(stride 1), each window its own group and no time stamp, so the split scatters them: every validation
window shares 11 of its 12 days with a training window on each side."""

import dataclasses

from pilot.data.split import make_splits
from tests.planted_tasks._series import GRUForecaster, L, window_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}


def make_task():
    task = window_task(lambda s, t: s[t + 1 - L : t + 1], lambda s, t: s[t + 1])
    windows = sorted((e for split in task.splits.values() for e in split), key=lambda e: e.index)
    untimed = [dataclasses.replace(e, time=None) for e in windows]  # no time stamp: split by group, at random
    task.splits = make_splits(untimed, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    return task


def build_model(task):
    return GRUForecaster()
