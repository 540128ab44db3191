"""One class's inputs on another scale than the others' (``class_scale_warnings``): a preprocessing
applied twice to one class's source (a ``/ 255`` on images already in [0, 1]), or to one source only,
when the classes came from different exports. The class is then readable from the inputs' size
alone, and a model learns the scale, not the content: training, the tiny subset and validation all
pass on it.

For a vector task's features (``vector_key``) with one label per example: each training example's
peak magnitude (max |x|); warned when two classes' peaks do not overlap at all (every example of one
below every example of the other) and their medians are ``class_scale_ratio`` times apart or more,
within ``UNIT_TOLERANCE`` of the factor of an integer encoding (``UNIT_FACTORS``: 255 of 8-bit pixels,
32767 and 65535 of 16-bit audio and images). Classes that differ in brightness or loudness by nature
(day and night, blank pages and text, silence 40 dB under speech: 100x) differ by other ratios and are
not warned about.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding

UNIT_FACTORS = (255.0, 256.0, 32767.0, 32768.0, 65535.0, 65536.0)
UNIT_TOLERANCE = 0.05  # relative


def unit_factor(ratio: float) -> float | None:
    """The unit factor ``ratio`` is (within ``UNIT_TOLERANCE``), else None."""
    return next((unit for unit in UNIT_FACTORS if abs(ratio / unit - 1.0) <= UNIT_TOLERANCE), None)


def _class_name(views: ModelViews, value: Any, names: list[str] | None) -> str:
    index = int(value) if np.issubdtype(np.asarray(value).dtype, np.integer) else None
    if names and index is not None and 0 <= index < len(names):
        return str(names[index])
    return str(np.asarray(value).item())


def class_scale_warnings(
    views: ModelViews, limits: LeakThresholds, class_names: list[str] | None = None
) -> tuple[list[Finding], dict[str, Any]]:
    """(warnings, report): the pair of training classes whose inputs' peak magnitudes are separated
    (no overlap) and furthest apart, when their medians differ by ``class_scale_ratio`` or more."""
    key = vector_key(views)
    labels = scalar_labels(views, "train") if "train" in views.labels else None
    if key is None or labels is None or len(labels) < limits.leak_min_examples:
        return [], {"skipped": "no vector inputs with one label per example, or too few examples"}
    peaks = np.abs(feature_matrix(views, key, "train")).max(axis=1)
    classes = [c for c in np.unique(labels) if (labels == c).sum() >= limits.leak_min_class]
    per_class = {c: peaks[labels == c] for c in classes}
    report: dict[str, Any] = {"key": key, "median_peak": {str(c): float(np.median(p)) for c, p in per_class.items()}}
    worst = None
    for low in classes:
        for high in classes:
            below, above = per_class[low], per_class[high]
            if low == high or below.max() >= above.min():
                continue
            ratio = float(np.median(above) / max(float(np.median(below)), 1e-30))
            if ratio >= limits.class_scale_ratio and unit_factor(ratio) and (worst is None or ratio > worst[2]):
                worst = (low, high, ratio)
    if worst is None:
        return [], report
    low, high, ratio = worst
    report.update(low_class=str(low), high_class=str(high), ratio=ratio)
    finding = Finding(
        f"the {key} of class {_class_name(views, low, class_names)} are {ratio:.3g}x smaller than those of "
        f"class {_class_name(views, high, class_names)}, a unit factor ({unit_factor(ratio):g}) (median peak |x| {np.median(per_class[low]):.3g} vs "
        f"{np.median(per_class[high]):.3g}; every example of the one below every example of the other)",
        detail="the class is readable from the inputs' size alone and a model learns that, not the content: "
        "a preprocessing applied twice to one class's source (a / 255 on inputs already in [0, 1]) or to one "
        "source only. Fix: bring every source to one scale before the examples are built",
    )
    return [finding], report
