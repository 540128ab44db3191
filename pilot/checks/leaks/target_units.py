"""A regression target recorded in two units (``target_unit_warnings``): heights in centimetres from one
hospital and in metres from another, grams and kilograms, merged without a conversion. Part of the
targets is then 100x (1000x) smaller with nothing in the inputs to say which; the loss is dominated by
the large ones and the model predicts between the two scales, while every check that trains passes.

For a float target per example (all positive): the training targets split at the widest gap of their
logarithms into two groups of at least ``MIN_SHARE`` each, every target of one below every target of
the other, whose medians are a power-of-ten unit factor apart (``FACTORS``, within ``TOLERANCE``).
Not when the inputs tell the groups apart (a 5-nearest-neighbour classifier of the group, out of fold,
balanced accuracy at least ``EXPLAINED``): two product families, phone cases and laptops, priced 100x
apart in one unit are what the inputs show. A raw field whose values fall each in one group is named as
where the two units come from.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.leaks.train_transform import knn_separability
from pilot.checks.result import Finding

FACTORS = (100.0, 1000.0, 1024.0, 1e6)
TOLERANCE = 0.1  # relative, around the factor
MIN_SHARE = 0.05
MIN_EXAMPLES = 30
EXPLAINED = 0.9


def _inputs_tell(views: ModelViews, small: np.ndarray) -> float | None:
    """How well the vector inputs (standardised) tell the two groups apart (``knn_separability``); None
    without vector inputs."""
    key = vector_key(views)
    if key is None:
        return None
    x = feature_matrix(views, key, "train")
    std = x.std(axis=0)
    return knn_separability((x - x.mean(axis=0)) / np.where(std > 0, std, 1.0), small)


def _factor(ratio: float) -> float | None:
    return next((f for f in FACTORS if abs(ratio / f - 1.0) <= TOLERANCE), None)


def _source_field(views: ModelViews, small: np.ndarray) -> str | None:
    """A raw field (2-20 values) each of whose values is in one group only: where the units differ."""
    train = views.splits["train"]
    for name in sorted(train[0].fields):
        values = [train[i].fields.get(name) for i in range(len(small))]
        if not all(isinstance(v, (str, int, bool)) for v in values) or not 2 <= len(set(values)) <= 20:
            continue
        if all(len({bool(s) for v2, s in zip(values, small) if v2 == v}) == 1 for v in set(values)):
            return name
    return None


def target_unit_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    labels = scalar_labels(views, "train") if "train" in views.labels and not views.skipped else None
    if labels is None or not np.issubdtype(labels.dtype, np.floating) or len(labels) < MIN_EXAMPLES:
        return [], {}
    y = labels.astype(np.float64)
    if not np.isfinite(y).all() or (y <= 0).any() or len(views.splits["train"]) != len(y):
        return [], {}
    logs = np.sort(np.log10(y))
    gaps = np.diff(logs)
    cut = int(np.argmax(gaps))
    low, high = logs[: cut + 1], logs[cut + 1 :]
    share = min(len(low), len(high)) / len(logs)
    ratio = float(10 ** (np.median(high) - np.median(low)))
    factor = _factor(ratio)
    report = {"ratio_of_medians": ratio, "smaller_share": share}
    if share < MIN_SHARE or factor is None:
        return [], report
    small = np.log10(y) <= low[-1]
    report["inputs_tell_the_groups"] = told = _inputs_tell(views, small)
    if told is not None and told >= EXPLAINED:
        return [], report
    field = _source_field(views, small)
    source = f"; field {field!r} says which: each of its values is in one group" if field else ""
    finding = Finding(
        f"the training targets fall in two groups {ratio:.3g}x apart, a unit factor ({factor:g}): {int(small.sum())} "
        f"of {len(y)} between {y[small].min():.4g} and {y[small].max():.4g}, the rest between "
        f"{y[~small].min():.4g} and {y[~small].max():.4g}{source}",
        detail="targets recorded in two units (centimetres and metres, grams and kilograms) merged without a "
        "conversion: the loss is dominated by the large ones and the model predicts between the two scales. "
        "Fix: convert every target to one unit before the examples are built",
    )
    return [finding], report
