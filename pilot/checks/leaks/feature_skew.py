"""Features of one split on another scale than training's (``feature_skew_warnings``): a scaler fit on
train and applied to train only (validation left in raw units), a normalisation computed per split,
a feature in other units in one split. The split then measures inputs the model never trained on.

For a vector task's features (``vector_key``): per feature, how far a later split's mean lies from
train's, in train's standard deviations, and the ratio of the two spreads; the same between two
halves of train split by group is the baseline (what a split by group gives with no transformation).
Warned when a feature's mean moves by at least ``feature_shift`` train standard deviations, or its
spread changes by a factor of ``feature_spread_ratio``, and by ``skew_ratio`` times the halves' most.
Not for a split by time, whose later splits move with any trend in the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, train_group_halves, vector_key
from pilot.checks.leaks.relation_causes import reordered_columns
from pilot.checks.leaks.split_transform import whole_split_warnings
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding

SHOWN = 3  # features named
CONTINUOUS = 10  # distinct values a feature takes in both splits before their spreads are compared


def _distinct(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values, axis=0)
    return (np.diff(ordered, axis=0) != 0).sum(axis=0) + 1


def _moves(base: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: |mean shift| in base's standard deviations, and the spread ratio (>= 1 either way;
    1 where either side takes fewer than ``CONTINUOUS`` values: a sparse or coded feature's spread
    says little)."""
    mean, std = base.mean(axis=0), base.std(axis=0)
    other_std = other.std(axis=0)
    varies = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    shift = np.where(varies, np.abs(other.mean(axis=0) - mean) / np.where(varies, std, 1.0), 0.0)
    continuous = varies & (_distinct(base) >= CONTINUOUS) & (_distinct(other) >= CONTINUOUS) & (other_std > 0)
    ratio = np.where(continuous, other_std / np.where(continuous, std, 1.0), 1.0)
    return shift, np.maximum(ratio, 1.0 / ratio)


def _halves(views: ModelViews, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    in_first = train_group_halves(views)
    return train[in_first], train[~in_first]


def _named(features: np.ndarray, train: np.ndarray, other: np.ndarray, split: str) -> str:
    return "; ".join(
        f"feature {int(f)}: train mean {train[:, f].mean():.4g} sd {train[:, f].std():.3g}, "
        f"{split} mean {other[:, f].mean():.4g} sd {other[:, f].std():.3g}"
        for f in features[:SHOWN]
    )


def feature_skew_warnings(
    task: Any, views: ModelViews, limits: LeakThresholds, split_by: str = "group"
) -> tuple[list[Finding], dict[str, Any]]:
    if split_by == "time":  # later splits are later in time: a trend moves their features by design
        return [], {"skipped": "split by time"}
    if views.skipped or len({e.group for e in views.splits.get("train", [])}) < 2 * limits.leak_min_class:
        return [], {}
    findings, report, warned = _target_skew(views, limits)
    key = vector_key(views)
    if key is None:
        return findings, report
    train = feature_matrix(views, key, "train")
    halves = _halves(views, train)
    half_shift, half_ratio = _moves(*halves)
    base_shift, base_ratio = float(half_shift.max(initial=0.0)), float(half_ratio.max(initial=1.0))
    report.update({"feature_key": key, "train_halves_shift": round(base_shift, 3)})
    for split in views.order():
        if split == "train" or len(views.inputs[split]) < limits.leak_min_class:
            continue
        other = feature_matrix(views, key, split)
        shift, ratio = _moves(train, other)
        report[f"{split}_max_shift"], report[f"{split}_max_spread_ratio"] = (
            round(float(shift.max()), 3),
            round(float(ratio.max()), 3),
        )
        moved = (shift >= max(limits.feature_shift, limits.skew_ratio * base_shift)) | (
            ratio >= max(limits.feature_spread_ratio, limits.skew_ratio * base_ratio)
        )
        if not moved.any():
            continue
        warned.add(split)
        if reordered := reordered_columns(train, other, split):  # every column there, each in another place
            findings.append(Finding(reordered))
            continue
        worst = np.argsort(-(shift + np.log(ratio)) * moved)[: int(moved.sum())]
        findings.append(
            Finding(
                f"{int(moved.sum())} of {train.shape[1]} {split} feature(s) on another scale than train's "
                f"(mean moved by up to {shift.max():.3g} train standard deviations, spread by up to "
                f"{ratio.max():.3g}x; two halves of train split by group: {base_shift:.3g} and "
                f"{base_ratio:.3g}x): {_named(worst, train, other, split)}",
                detail=f"a scaler or normalisation applied to one split only, or computed per split? {split} "
                "then measures inputs the model never trained on (a time-like feature past train's range "
                "moves too)",
            )
        )
    whole, said = whole_split_warnings(views, key, limits, halves, warned)
    return findings + whole, {**report, **said}


def _target_skew(views: ModelViews, limits: LeakThresholds) -> tuple[list[Finding], dict[str, Any], set[str]]:
    """A regression's targets (one float per example) on another scale in a later split than in train:
    targets standardised for training, left in raw units for validation (or the other way round)."""
    train = scalar_labels(views, "train")
    if train is None or train.dtype.kind != "f" or len(train) < limits.leak_min_class:
        return [], {}, set()
    train = train.reshape(-1, 1).astype(np.float64)
    half_shift, half_ratio = (float(v[0]) for v in _moves(*_halves(views, train)))
    findings, report, warned = [], {"targets_train_halves_shift": round(half_shift, 3)}, set()
    for split in views.order():
        other = scalar_labels(views, split) if split != "train" else None
        if other is None or other.dtype.kind != "f" or len(other) < limits.leak_min_class:
            continue
        shift, ratio = (float(v[0]) for v in _moves(train, other.reshape(-1, 1).astype(np.float64)))
        report[f"targets_{split}_shift"] = round(shift, 3)
        if shift < max(limits.feature_shift, limits.skew_ratio * half_shift) and ratio < max(
            limits.feature_spread_ratio, limits.skew_ratio * half_ratio
        ):
            continue
        warned.add(split)
        findings.append(
            Finding(
                f"the {split} targets are on another scale than train's: train mean {train.mean():.4g} sd "
                f"{train.std():.3g}, {split} mean {other.mean():.4g} sd {other.std():.3g} (moved by {shift:.3g} "
                f"train standard deviations, spread {ratio:.3g}x; two halves of train: {half_shift:.3g}, "
                f"{half_ratio:.3g}x)",
                detail=f"targets scaled for training and left in raw units in {split} (or scaled per split)? Its "
                "loss and every metric then compare predictions on train's scale with targets on another. Fix: "
                "apply train's transformation to every split's targets",
            )
        )
    return findings, report, warned
