"""A later split scaled with its own statistics (``own_statistics_warnings``): ``StandardScaler().fit_
transform`` (or a min-max scaler) called on validation and test too, instead of ``transform`` with
training's statistics. Each split then has mean 0 and standard deviation 1 (or min 0 and max 1) per
feature *exactly*, which a sample scaled with another sample's statistics never has; and whatever
moved between the splits (a drift, another population) is erased from the inputs while the targets
still carry it: validation measures the model on inputs made to look like training's.

For a vector task's features (``vector_key``): a later split of at least ``MIN_EXAMPLES`` examples whose
every continuous feature (``CONTINUOUS`` distinct values or more) has mean 0 and standard deviation 1
(population or sample), or min 0 and max 1, within ``EXACT``. The same for a regression's targets (one
float per example, continuous): a later split's targets at mean 0 and standard deviation 1 exactly were
standardised with their own split's statistics, so validation's numbers are in another unit than training's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding

MIN_EXAMPLES = 20
CONTINUOUS = 10
EXACT = 1e-4
PILED = 0.05


def _scaled(x: np.ndarray, clipped: bool = False) -> str | None:
    """How ``x``'s continuous features were all scaled on ``x`` itself, or None; ``clipped``: values clipped
    to [0, 1] (``_piled``), whose min 0 and max 1 say nothing of a scaler."""
    distinct = np.array([len(np.unique(column)) for column in x.T])
    x = x[:, distinct >= CONTINUOUS]
    if x.shape[1] == 0:
        return None
    means, stds = x.mean(axis=0), [x.std(axis=0, ddof=d) for d in (0, 1)]
    if np.abs(means).max() <= EXACT and any(np.abs(s - 1.0).max() <= EXACT for s in stds):
        return "mean 0 and standard deviation 1"
    if np.abs(x.min(axis=0)).max() <= EXACT and np.abs(x.max(axis=0) - 1.0).max() <= EXACT and not clipped:
        return "min 0 and max 1"
    return None


def _piled(y: np.ndarray) -> bool:
    """Targets with ``PILED`` of their values or more at their minimum and as many at their maximum: clipped
    to [0, 1] (``clipped_targets``), not min-max scaled, which puts one value at each end."""
    return bool((y == y.min()).mean() >= PILED and (y == y.max()).mean() >= PILED)


def own_statistics_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    targets, report = ([], {}) if views.skipped else _targets_scaled_on_themselves(views)
    features, more = _features_scaled_on_themselves(views)
    return features + targets, {**more, **report}


def _targets_scaled_on_themselves(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    scaled = {}
    for split in views.order():
        labels = scalar_labels(views, split)
        if labels is not None and len(labels) >= MIN_EXAMPLES and np.issubdtype(labels.dtype, np.floating):
            y = labels.astype(np.float64)
            scaled[split] = _scaled(y.reshape(-1, 1), clipped=_piled(y))
    later = [s for s in views.order() if s != "train" and scaled.get(s)]
    if not later:
        return [], {"targets_scaled_on_themselves": scaled} if scaled else {}
    finding = Finding(
        f"{' and '.join(later)}'s targets have {scaled[later[0]]} exactly ({EXACT:g}), as targets scaled with their "
        "own split's statistics have: a scaler fitted on each split's targets",
        detail="validation's targets are then in another unit than training's (its own mean and spread), so its loss "
        "and every number computed from it mean something else. Fix: fit the target scaler on training and only "
        "transform the other splits (and invert it with training's statistics)",
    )
    return [finding], {"targets_scaled_on_themselves": scaled}


def _features_scaled_on_themselves(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    if key is None:
        return [], {}
    scaled = {s: _scaled(feature_matrix(views, key, s)) for s in views.order() if len(views.inputs[s]) >= MIN_EXAMPLES}
    report = {"scaled_on_itself": scaled}
    later = [s for s in views.order() if s != "train" and scaled.get(s)]
    if not later:
        return [], report
    finding = Finding(
        f"{' and '.join(later)}'s {key} have {scaled[later[0]]} per feature exactly ({EXACT:g}), as a split scaled "
        "with its own statistics has: a scaler fitted on each split (fit_transform on validation too)",
        detail="whatever moved between the splits is erased from the inputs while the targets still carry it, so "
        "validation measures the model on inputs made to look like training's. Fix: fit the scaler on training and "
        "only transform the other splits",
    )
    return [finding], report
