"""shared: a sensor's 10-minute readings, a daily cycle plus an AR(1) drift (phi 0.995): each reading is
almost the one before it (correlation above 0.99), and a forecast's inputs are the last readings."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._windows import window_regression

LAGS = 6


def readings(count: int = 900) -> np.ndarray:
    rng = np.random.default_rng(21)
    drift = np.zeros(count)
    for step in range(1, count):
        drift[step] = 0.995 * drift[step - 1] + rng.normal(0, 0.3)
    return 15 + 5 * np.sin(2 * np.pi * np.arange(count) / 144) + drift + rng.normal(0, 0.1, count)


def forecast_task(window) -> object:
    """The reading at step k from ``window(series, k)``, split by time."""
    series = readings()
    examples = [
        Example(index=i, group=f"t{k}", time=float(k), fields={"window": window(series, k), "y": float(series[k])})
        for i, k in enumerate(range(LAGS, len(series) - 1))
    ]
    return window_regression(examples, by="time")
