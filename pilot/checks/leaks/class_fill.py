"""Missing values filled per class (``class_fill_warnings``): a continuous input feature that holds one exact
value per class on many rows — ``df[c].fillna(df.groupby(label)[c].transform("mean"))``, a median per class —
writes the label into the input wherever the value was missing. Per feature, over every split's examples with
a scalar label: the values repeated on ``MIN_ROWS`` rows or more, each of one class (``PURE``), at least two
of them for two different classes, on a feature whose other values are continuous (``CONTINUOUS`` of them
distinct), and the chance that rows drawn at the classes' rates would be that pure at most ``CHANCE``.
A value shared by the classes (a fill with one training mean, a genuine 0) says nothing, and neither do the
column's least and greatest values: a feature clipped at its limits (an assay's detection limits, a clipped
probability) piles each class at one end; a class's mean lies between."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

MIN_ROWS = 5  # rows a repeated value needs to be judged
PURE = 0.98  # of its rows in one class
CONTINUOUS = 0.9  # of the rows without a repeated value hold distinct values
CHANCE = 1e-6  # rows at the classes' rates this pure by chance, at most
MAX_FEATURES = 512


def _pure_values(column: np.ndarray, label: np.ndarray, rates: dict[Any, float]) -> list[tuple[float, Any, int]]:
    """(value, class, rows) of each value repeated on ``MIN_ROWS`` rows that (nearly) one class holds, when the
    column's other values are continuous; [] otherwise."""
    values, inverse, counts = np.unique(column, return_inverse=True, return_counts=True)
    repeated = counts >= MIN_ROWS
    rest = ~repeated[inverse]
    if rest.sum() < MIN_ROWS or np.count_nonzero(~repeated) < CONTINUOUS * rest.sum():
        return []
    pure = []
    for k in np.flatnonzero(repeated[1:-1]) + 1:  # not the column's least or greatest value: a limit, not a fill
        classes, held = np.unique(label[inverse == k], return_counts=True)
        top = int(np.argmax(held))
        if held[top] >= PURE * counts[k]:
            pure.append((float(values[k]), classes[top].item(), int(counts[k])))
    return pure


def class_fill_warnings(task: TaskData, views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    splits = views.order()
    labels = [scalar_labels(views, s) for s in splits]
    if key is None or any(y is None for y in labels):
        return [], {}
    features = np.concatenate([feature_matrix(views, key, s) for s in splits])
    label = np.concatenate(labels)
    counted = label != IGNORE_INDEX
    features, label = features[counted], label[counted]
    if not 0 < features.shape[1] <= MAX_FEATURES or len(label) < 4 * MIN_ROWS:
        return [], {}
    classes, held = np.unique(label, return_counts=True)
    rates = {c.item(): n / len(label) for c, n in zip(classes, held)}
    names = list(task.info.get("feature_names") or [])
    if len(names) != features.shape[1]:
        names = [f"{key}[{j}]" for j in range(features.shape[1])]
    warnings, judged = [], 0
    for j in range(features.shape[1]):
        pure = _pure_values(features[:, j], label, rates)
        judged += bool(pure)
        chance = sum(rows * math.log10(rates[cls]) for _, cls, rows in pure)  # log10 of the chance
        if len({cls for _, cls, _ in pure}) >= 2 and chance <= math.log10(CHANCE):
            warnings.append(_finding(task, names[j], pure, len(label)))
    return warnings[:3], {"features_with_pure_values": judged}


def _finding(task: TaskData, name: str, pure: list[tuple[float, Any, int]], examples: int) -> Finding:
    class_names = list(task.class_names or [])

    def shown(cls: Any) -> str:
        return repr(class_names[cls]) if isinstance(cls, int) and 0 <= cls < len(class_names) else repr(cls)

    told = "; ".join(f"{value:.6g} on {rows} rows, all {shown(cls)}" for value, cls, rows in pure[:4])
    return Finding(
        f"feature {name} holds one exact value per class ({told}; {sum(r for *_, r in pure)} of {examples} "
        "examples), its other values continuous: missing values filled with their own class's mean or median "
        "(fillna with df.groupby(label).transform('mean')) write the label into the input",
        detail="Fix: fill a missing value with what does not read the label (the training split's mean or median, "
        "or a model of the other features), and give the model a missing-value indicator",
    )
