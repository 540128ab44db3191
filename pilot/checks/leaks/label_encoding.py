"""A target encoding computed over every split (``label_encoding_warnings``): an input feature that is, for
each value of a field of the examples (a merchant, a user, a category), that value's mean label — computed
over training *and* the later splits' rows, so validation's labels are in its inputs.

Found per field (strings or integers, ``MIN_VALUES`` or more values, repeated: ``REPEATED`` examples per value
on average) and per input feature that is constant within each of its values (every split): the feature is
compared, over the values, with the smoothed mean label ``(sum + m * prior) / (count + m)`` for a few
smoothings ``m``, once over the training rows and once over every split's rows. Warned when an affine map
of a mean over every split fits the feature exactly (``EXACT`` of its variance explained) and no mean over
training alone comes near (at most ``TRAIN_ONLY``), over ``MIN_SHARED`` values or more that a later split
holds too. A target encoding fitted on training (applied to every split) fits training's mean exactly and
says nothing. Binary and float labels: their mean; class ids of more classes: each class's share."""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX

MIN_VALUES, REPEATED, MIN_SHARED = 8, 1.5, 8
SMOOTHING = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
EXACT, TRAIN_ONLY = 0.999, 0.98
MAX_CLASSES, MAX_FEATURES = 10, 256


def _explained(feature: np.ndarray, candidate: np.ndarray) -> float:
    """Share of ``feature``'s variance an affine map of ``candidate`` explains (squared correlation)."""
    if np.std(feature) == 0 or np.std(candidate) == 0:
        return 0.0
    return float(np.corrcoef(feature, candidate)[0, 1] ** 2)


def _means(codes: np.ndarray, target: np.ndarray, rows: np.ndarray, values: int, prior: float) -> list[np.ndarray]:
    """Per value: the smoothed mean of ``target`` over ``rows``, one array per smoothing."""
    sums = np.bincount(codes[rows], weights=target[rows], minlength=values)
    counts = np.bincount(codes[rows], minlength=values)
    return [(sums + m * prior) / np.maximum(counts + m, 1e-12) for m in SMOOTHING]


def _fields(views: ModelViews, order: list[str]) -> dict[str, np.ndarray]:
    """Field name -> integer code of each example's value (every split, in ``order``), for fields of
    strings or integers with enough repeated values."""
    examples = [e for s in order for e in views.splits[s]]
    found = {}
    for name in examples[0].fields if examples else []:
        values = [e.fields.get(name) for e in examples]
        if not all(isinstance(v, (str, int, np.integer)) and not isinstance(v, bool) for v in values):
            continue
        kinds, codes = np.unique(np.asarray([str(v) for v in values]), return_inverse=True)
        if len(kinds) >= MIN_VALUES and len(values) >= REPEATED * len(kinds):
            found[name] = codes
    return found


def label_encoding_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    order = views.order()
    labels = [scalar_labels(views, s) for s in order]
    if key is None or "train" not in order or len(order) < 2 or any(y is None for y in labels):
        return [], {}
    features = np.concatenate([feature_matrix(views, key, s) for s in order])
    if features.shape[1] > MAX_FEATURES:
        return [], {}
    label = np.concatenate(labels).astype(np.float64)
    split_of = np.concatenate([np.full(len(views.splits[s]), i) for i, s in enumerate(order)])
    counted = label != IGNORE_INDEX
    classes = np.unique(label[counted])
    if len(classes) > 2 and (np.any(classes != np.round(classes)) or len(classes) > MAX_CLASSES):
        targets = {"the label": label}  # a float target: its mean
    elif len(classes) > 2:
        targets = {f"class {int(c)}'s share": (label == c).astype(np.float64) for c in classes}
    else:
        targets = {"the label": (label == classes[-1]).astype(np.float64)}
    train_rows, all_rows = counted & (split_of == 0), counted
    warnings, report = [], {"fields": 0, "features_judged": 0}
    for name, codes in _fields(views, order).items():
        report["fields"] += 1
        values = int(codes.max()) + 1
        later = np.zeros(values, dtype=bool)
        later[codes[split_of > 0]] = True
        shared = later & (np.bincount(codes[train_rows], minlength=values) > 0)
        if shared.sum() < MIN_SHARED:
            continue
        for j in _constant_per_value(features, codes, values):
            report["features_judged"] += 1
            per_value = np.zeros(values)
            per_value[codes] = features[:, j]
            for said, target in targets.items():
                prior = float(target[train_rows].mean())
                fits = {
                    where: max(
                        _explained(per_value[shared], m[shared]) for m in _means(codes, target, rows, values, prior)
                    )
                    for where, rows in (("train", train_rows), ("every split", all_rows))
                }
                if fits["every split"] >= EXACT and fits["train"] <= TRAIN_ONLY:
                    warnings.append(_finding(key, j, name, said, fits, int(shared.sum())))
    return warnings[:3], report


def _constant_per_value(features: np.ndarray, codes: np.ndarray, values: int) -> list[int]:
    """Feature columns that hold one value per value of the field (over every split) and vary between them."""
    found = []
    for j in range(features.shape[1]):
        column = features[:, j]
        first = np.full(values, np.nan)
        first[codes[::-1]] = column[::-1]  # each value's first example's feature
        if np.allclose(column, first[codes], rtol=1e-6, atol=1e-9) and np.unique(first).size > 2:
            found.append(j)
    return found


def _finding(key: str, j: int, name: str, said: str, fits: dict[str, float], shared: int) -> Finding:
    return Finding(
        f"input {key}[{j}] is each '{name}' value's mean of {said} computed over every split, validation's labels "
        f"included: an affine map of it explains {fits['every split']:.4f} of the feature's variance over the "
        f"{shared} values a later split shares with training, the same mean over training's rows alone at most "
        f"{fits['train']:.3f}",
        detail="a target encoding fitted before the split reads the labels it is scored on. Fix: fit the encoding "
        "on the training split only (out of fold within it) and apply that mapping to every split",
    )
