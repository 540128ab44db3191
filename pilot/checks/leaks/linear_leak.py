"""A continuous target that is an exact linear function of the inputs (``linear_leak_warnings``): the
target, or something computed from it, is inside the input, spread over several features so no single
one gives it away. A forecast window standardised with statistics that include the day to forecast
(its scaled values then sum to minus the scaled target), a total given as a feature beside its parts
minus the part to predict.

For vector inputs and one continuous label per example (a regression: at least ``MIN_DISTINCT_SHARE`` of
the labels distinct), or each column of a vector of them (a multi-step forecast whose window's first target
is the inputs' last value; every column exact is a reconstruction, an autoencoder's, not judged): least squares with an intercept fitted on train, applied to each later split. Warned
when the unexplained share of a later split's target variance (1 - R^2) is at most ``EXACT`` — equal up
to float rounding. Genuine data is never that exact: a next-day forecast from a long random walk, the most
persistent series there is, leaves (step noise / spread)^2, about 1e-3. Not judged: inputs whose own last
value is such a function of the others (a noise-free series, sines: its next step is as exact as its last,
with no leak). A synthetic target written as an exact linear map of random inputs without noise is warned
about too (said in the message).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX

EXACT = 1e-6  # 1 - R^2 at or below this: exact up to float rounding
MIN_DISTINCT_SHARE = 0.5  # of the labels distinct: a continuous target, not classes
MAX_FEATURES = 512
MIN_EXAMPLES_PER_FEATURE = 2  # train examples per fitted coefficient
MAX_COLUMNS = 16  # of a vector target per example (a forecast's horizon), each judged as a target of its own


def _label_columns(views: ModelViews, split: str) -> np.ndarray | None:
    """The split's float labels as (examples, columns): one column for a value per example, ``MAX_COLUMNS``
    at most for a vector per example (a multi-step forecast); None otherwise."""
    labels = scalar_labels(views, split)
    if labels is not None:
        return labels.reshape(-1, 1)
    rows = views.labels[split]
    if not rows or len({row.size for row in rows}) != 1 or not 1 < rows[0].size <= MAX_COLUMNS:
        return None
    return np.stack([row.reshape(-1) for row in rows])


def _counted(views: ModelViews, key: str, split: str, column: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    labels = _label_columns(views, split)
    if labels is None or not np.issubdtype(labels.dtype, np.floating):
        return None
    features, labels = feature_matrix(views, key, split), labels[:, column].astype(np.float64)
    kept = (labels != IGNORE_INDEX) & np.isfinite(labels) & np.isfinite(features).all(axis=1)
    return features[kept], labels[kept]


def _unexplained(x: np.ndarray, y: np.ndarray) -> float:
    """1 - R^2 of least squares with an intercept (1 for a constant ``y``: nothing to explain)."""
    if y.var() == 0:
        return 1.0
    design = np.hstack([x, np.ones((len(x), 1))])
    residual = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    return float((residual**2).mean() / y.var())


def linear_leak_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    try:
        return _linear_leak(views)
    except (ValueError, TypeError, np.linalg.LinAlgError, MemoryError) as error:  # labels or inputs it cannot fit
        return [], {"skipped": f"{type(error).__name__}: {str(error)[:200]}"}


def _linear_leak(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    order = views.order()
    if key is None or len(order) < 2:
        return [], {}
    columns = _label_columns(views, order[0])
    if columns is None:
        return [], {}
    if columns.shape[1] == 1:
        return _column_leak(views, key, order, None)
    judged = [_column_leak(views, key, order, column) for column in range(columns.shape[1])]  # each step alone
    exact = [column for column, (findings, _) in enumerate(judged) if findings]
    report = {"exact_target_columns": exact, "target_columns": columns.shape[1]}
    if len(exact) == columns.shape[1]:  # the whole target is the input again: a reconstruction (autoencoder)
        return [], {**report, "every_column_exact": "the target reproduces the inputs (an autoencoder?): not judged"}
    return (judged[exact[0]][0] if exact else []), report


def _column_leak(
    views: ModelViews, key: str, order: list[str], column: int | None
) -> tuple[list[Finding], dict[str, Any]]:
    """The leak test of one target column (None: the one target per example)."""
    train = _counted(views, key, order[0], column or 0)
    if train is None:
        return [], {}
    x, y = train
    features = x.shape[1]
    if (
        features > MAX_FEATURES
        or len(y) < MIN_EXAMPLES_PER_FEATURE * (features + 1)
        or len(np.unique(y)) < MIN_DISTINCT_SHARE * len(y)
    ):
        return [], {}
    design = np.hstack([x, np.ones((len(x), 1))])
    coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
    findings, report = [], {}
    if features > 1 and _unexplained(x[:, :-1], x[:, -1]) <= EXACT:  # the inputs' own last value, from the rest
        report["inputs_follow_an_exact_linear_recurrence"] = True  # a noise-free series (sines): its next step
        return findings, report  # is as exact as its last, with no leak
    for split in order[1:]:
        later = _counted(views, key, split, column or 0)
        if later is None or len(later[1]) < 10 or later[1].var() == 0:
            continue
        residual = later[1] - np.hstack([later[0], np.ones((len(later[0]), 1))]) @ coefficients
        unexplained = float((residual**2).mean() / later[1].var())
        report[f"{split}_unexplained_share"] = unexplained
        if unexplained <= EXACT:
            findings.append(_finding(split, key, unexplained, coefficients[:-1], column))
    return findings, report


def _finding(split: str, key: str, unexplained: float, weights: np.ndarray, column: int | None = None) -> Finding:
    top = np.argsort(-np.abs(weights))[:3]
    named = ", ".join(f"{key}[{j}] x {weights[j]:.3g}" for j in top)
    target = "target" if column is None else f"target column {column} (of each example's vector of targets)"
    return Finding(
        f"{split}'s {target} is a linear function of the inputs, exact up to rounding: least squares fitted on "
        f"train leaves {unexplained:.1e} of {split}'s target variance unexplained (largest weights: {named})",
        detail="the target, or something computed from it, is in the input: a window scaled with statistics "
        "that include the day to forecast, a total beside its parts. Fix: compute every input from what is known "
        "before the target (a noise-free synthetic target written as a linear map of its inputs is this too)",
    )
