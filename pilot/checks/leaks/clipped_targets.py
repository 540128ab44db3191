"""A continuous regression target clipped at both ends (``clipped_target_warnings``): targets
standardised (mean 0, spread 1) and then clipped to [0, 1] as if they were min-max scaled, or any
``clip(y, low, high)`` narrower than the data. Every target beyond an end becomes that end: half the
data set may train towards one value, and nothing that trains can tell, since the clipped targets are
what the loss reads and are easy to fit.

For one float target per training example (``MIN_EXAMPLES`` or more): at least ``END_SHARE`` of them
equal exactly the smallest value *and* at least ``END_SHARE`` exactly the largest, while the targets
between take ``CONTINUOUS`` distinct values or more, nearly all of them different (a measured quantity
seldom repeats a value, let alone piles up at both of its extremes). A target piled at one end only
(counts, amounts with many zeros) is common and correct, and not judged; nor are targets of few values
(grades, ratings, shares k/n of a fixed n).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels
from pilot.checks.result import Finding

MIN_EXAMPLES = 30
END_SHARE = 0.05  # of the training targets, at each end
CONTINUOUS = 20  # distinct values strictly between the ends
DISTINCT_SHARE = 0.8  # of the targets between the ends, distinct


def clipped_target_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    labels = None if views.skipped or "train" not in views.labels else scalar_labels(views, "train")
    if labels is None or not np.issubdtype(labels.dtype, np.floating) or len(labels) < MIN_EXAMPLES:
        return [], {}
    y = labels.astype(np.float64)
    if not np.isfinite(y).all():
        return [], {}
    low, high = float(y.min()), float(y.max())
    between = y[(y > low) & (y < high)]
    distinct = len(np.unique(between))
    shares = float(np.mean(y == low)), float(np.mean(y == high))
    report = {
        "low": low,
        "high": high,
        "share_at_low": shares[0],
        "share_at_high": shares[1],
        "distinct_between": distinct,
    }
    continuous = distinct >= CONTINUOUS and distinct >= DISTINCT_SHARE * len(between)
    if low == high or min(shares) < END_SHARE or not continuous:
        return [], report
    finding = Finding(
        f"training's targets pile up at both ends of their range: {shares[0]:.0%} are exactly {low:g} and "
        f"{shares[1]:.0%} exactly {high:g}, while the {len(between)} between take {distinct} distinct values: a "
        f"continuous target clipped to [{low:g}, {high:g}] (np.clip or clamp after standardising, as if min-max scaled)",
        detail=f"every target beyond an end trains towards that end, so the model cannot learn how far beyond it lies "
        f"({shares[0] + shares[1]:.0%} of training). Fix: clip nothing, or scale into the range (min-max with "
        "training's minimum and maximum); if the quantity itself stops there (a share that is often exactly 0 or 1), "
        "nothing is wrong",
    )
    return [finding], report
