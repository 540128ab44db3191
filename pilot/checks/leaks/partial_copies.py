"""Copies that differ in a few features (``partial_copy_warnings``): a one-to-many merge (sales joined to a
table with several rows per store) repeats each row with the joined columns changed; split by row, the
copies land in training and in a later split, where the model meets examples it was fitted on. They are
not near-duplicates by distance when a changed column is large (a floor area x1.15).

For vector inputs: a feature counts when it is continuous (at least ``DISTINCT`` of training's values
distinct, so that two examples share an exact value by chance rarely); a later example that shares a
training example's exact value in at least ``SHARED`` of those features, but not in every feature (an
identical copy is the duplicate check's), has a partial copy there. Warned when ``MIN_EXAMPLES`` and
``MIN_SHARE`` of a later split have one and ``SAME_LABEL`` of those pairs carry one label (a copy carries
its row's label; rows of one entity sharing its attributes, a store's coordinates, each have their own).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, vector_key
from pilot.checks.result import Finding

DISTINCT = 0.5  # of training's values, distinct: a continuous feature
SHARED = 0.5  # of the continuous features, equal to the last bit
MIN_CONTINUOUS = 3
MIN_EXAMPLES, MIN_SHARE = 5, 0.05
SAME_LABEL = 0.9  # of the pairs, with one label: a copy carries its row's label
LISTED = 3


def _continuous(train: np.ndarray) -> np.ndarray:
    distinct = np.array([len(np.unique(train[:, c])) for c in range(train.shape[1])])
    return np.flatnonzero(distinct >= DISTINCT * len(train))


def _partners(train: np.ndarray, other: np.ndarray, columns: np.ndarray) -> dict[int, tuple[int, int]]:
    """Later example -> (its training partner, the continuous features they share exactly)."""
    shared: dict[int, Counter] = defaultdict(Counter)
    for c in columns:
        holders: dict[float, list[int]] = defaultdict(list)
        for i, value in enumerate(train[:, c].tolist()):
            holders[value].append(i)
        for j, value in enumerate(other[:, c].tolist()):
            for i in holders.get(value, ()):
                shared[j][i] += 1
    needed = max(2, int(np.ceil(SHARED * len(columns))))
    found = {}
    for j, counts in shared.items():
        i, count = counts.most_common(1)[0]
        if count >= needed and not np.array_equal(train[i], other[j]):
            found[j] = (i, count)
    return found


def partial_copy_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = vector_key(views) if not views.skipped else None
    if key is None:
        return [], {}
    train = feature_matrix(views, key, "train")
    if train.dtype.kind != "f" or train.ndim != 2:
        return [], {}
    columns = _continuous(train)
    report: dict[str, Any] = {"continuous_features": len(columns)}
    if len(columns) < MIN_CONTINUOUS:
        return [], report
    findings = []
    for split in views.order():
        if split == "train":
            continue
        other = feature_matrix(views, key, split)
        found = _partners(train, other, columns)
        report[f"{split}_partial_copies"] = len(found)
        if len(found) < max(MIN_EXAMPLES, MIN_SHARE * len(other)):
            continue
        same = sum(
            np.array_equal(views.labels[split][j], views.labels["train"][i]) for j, (i, _) in found.items()
        ) / len(found)
        report[f"{split}_partial_copies_same_label"] = round(same, 3)
        if same < SAME_LABEL:  # rows of one entity (a store's coordinates), each with its own outcome
            continue
        listed = "; ".join(
            f"{split} example {views.splits[split][j].index} ~ train example {views.splits['train'][i].index} "
            f"({count} of {len(columns)} continuous features equal)"
            for j, (i, count) in list(found.items())[:LISTED]
        )
        findings.append(
            Finding(
                f"{len(found)} of {len(other)} {split} examples are partial copies of training examples: they share a "
                f"training example's exact values in {SHARED:.0%} or more of the {len(columns)} continuous features "
                f"while differing elsewhere, {same:.0%} of them with the same label ({listed}). A one-to-many merge "
                "that repeats each row with "
                "the joined columns changed, split by row? The model is then scored on examples it was fitted on. "
                "Fix: deduplicate on the original row's key, or split by it (Example.group)",
                split,
            )
        )
    return findings, report
