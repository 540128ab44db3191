"""A target inside a window the inputs summarise (``window_target_warnings``): a forecast whose rolling
statistics include the day to forecast (pandas ``rolling(7).mean()`` without ``.shift(1)``). No input of one
example is the target, and no linear map of one example's inputs gives it (``linear_leak``: the window also
holds days older than the lags), but with the inputs of the few examples before it in time, it is exact: the
earlier examples' lags give the window's older days, and the window's mean gives the rest — the target.

For vector inputs and a continuous target (at least ``MIN_DISTINCT_SHARE`` of the labels distinct), examples
of one series (every ``Example.time`` distinct) in time order, every split's together: least squares with an
intercept on the inputs of each example and of the ``k`` before it (k = 1, 2, 4, 8, while examples per
coefficient allow), fitted on training's examples and applied to each later split's. Warned when a later
split's unexplained share of the target variance is at most ``EXACT`` while the earlier examples' inputs
alone (without the example's own) leave far more unexplained (``NOT_BEFORE``): the example's own inputs carry
its target. A noise-free series, whose next value the past inputs already give exactly, is not judged."""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.linear_leak import EXACT, MIN_DISTINCT_SHARE
from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding

LAGS = (1, 2, 4, 8)  # earlier examples whose inputs join each example's
EXAMPLES_PER_COEFFICIENT = 3
NOT_BEFORE = 1e-3  # the earlier examples alone leave at least this much unexplained: the target is new
MAX_FEATURES = 64


def _fit(design: np.ndarray, target: np.ndarray, rows: np.ndarray) -> np.ndarray:
    full = np.hstack([design, np.ones((len(design), 1))])
    return np.linalg.lstsq(full[rows], target[rows], rcond=None)[0]


def _unexplained(design: np.ndarray, target: np.ndarray, weights: np.ndarray, rows: np.ndarray) -> float:
    if rows.sum() < 10 or target[rows].var() == 0:
        return 1.0
    residual = target[rows] - np.hstack([design, np.ones((len(design), 1))])[rows] @ weights
    return float((residual**2).mean() / target[rows].var())


def window_target_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    order = views.order()
    labels = [scalar_labels(views, s) for s in order]
    if key is None or "train" not in order or len(order) < 2 or any(y is None for y in labels):
        return [], {}
    times = [e.time for s in order for e in views.splits[s]]
    if any(t is None for t in times) or len(set(times)) < len(times):
        return [], {}  # no time, or several series at once: not one series in time order
    features = np.concatenate([feature_matrix(views, key, s) for s in order])
    target = np.concatenate(labels).astype(np.float64)
    if features.shape[1] > MAX_FEATURES or len(np.unique(target)) < MIN_DISTINCT_SHARE * len(target):
        return [], {}
    split = np.concatenate([np.full(len(views.splits[s]), i) for i, s in enumerate(order)])
    ordered = np.argsort(np.asarray(times, dtype=np.float64), kind="stable")
    features, target, split = features[ordered], target[ordered], split[ordered]
    report: dict[str, Any] = {}
    for k in LAGS:
        if (k + 1) * features.shape[1] * EXAMPLES_PER_COEFFICIENT > (split == 0).sum():
            break
        before = np.hstack([features[k - j : len(features) - j] for j in range(1, k + 1)])
        design = np.hstack([features[k:], before])
        y, where = target[k:], split[k:]
        train = where == 0
        own = _fit(design, y, train)
        past = _fit(before, y, train)
        for i, name in enumerate(order[1:], start=1):
            rows = where == i
            exact, alone = _unexplained(design, y, own, rows), _unexplained(before, y, past, rows)
            report[f"{name}_with_{k}_earlier"] = {"unexplained": exact, "earlier_alone": alone}
            if exact <= EXACT and alone >= NOT_BEFORE:
                return [_finding(name, key, k, exact, alone)], report
    return [], report


def _finding(split: str, key: str, k: int, exact: float, alone: float) -> Finding:
    return Finding(
        f"{split}'s target is a linear function of its own inputs and those of the {k} example(s) before it in time, "
        f"exact up to rounding ({exact:.1e} of its variance unexplained, fitted on train), while the earlier "
        f"examples' inputs alone leave {alone:.3g}: the example's own {key!r} carries its target inside a window "
        "(a rolling mean or sum over days that include the day to forecast)",
        detail="statistics of a window ending at the target day (pandas rolling(n) without .shift(1)). Fix: compute "
        "every input from days strictly before the target (shift the window by one)",
    )
