"""a forecast window standardised with the statistics of the window *and the day to forecast* (mean and
spread over series[t-11 : t+2]): the scaled inputs then sum to minus the scaled target, which the model
reads off the window."""

from tests.planted_tasks._series import GRUForecaster, L, series, window_task

EXPECTED = {"step": "split_audit", "verdict": "warn"}
SETTINGS = {"split_by": "time"}


def make_task():
    task = window_task(lambda s, t: s[t + 1 - L : t + 1], lambda s, t: s[t + 1], norm=(0.0, 1.0))
    s = series(240)
    for examples in task.splits.values():
        for e in examples:
            t = int(e.time)
            days = s[t + 1 - L : t + 2]  # the window and its target day
            mu, sd = days.mean(), days.std()
            e.fields["window"] = ((s[t + 1 - L : t + 1] - mu) / sd).astype("float32")
            e.fields["y"] = float((s[t + 1] - mu) / sd)
    return task


def build_model(task):
    return GRUForecaster()
