"""One transformation applied to a whole split (``whole_split_warnings``), below the per-feature limits of
``feature_skew``: what a second preprocessing script, or an evaluation transform copied from elsewhere,
does to every input or every target of a split at once.

Inputs: every value of a later split's features, pooled, against every value of train's (quantiles 5% to
95%). When one affine map x -> a x + b carries train's quantiles onto the split's within ``FIT`` of train's
spread and its scale ``a`` is at least ``SCALE`` away from 1 (either way) and ``skew_ratio`` times further
than between two halves of train, every input of the split went through another normalisation: ImageNet's
mean and standard deviation in the training transform, (x - 0.5) / 0.5 in the evaluation one. A shift of
the images (augmentation) moves pixels, not values, and leaves the pooled quantiles where they were.

Targets: a regression's float target (``CONTINUOUS`` distinct values or more in both splits) whose median
moves by ``TARGET_SHIFT`` of train's robust standard deviations (IQR / 1.349) or more, and by ``SE_LIMIT``
standard errors of that difference, while the inputs did not move (no feature's mean by ``UNMOVED`` of
train's standard deviations, pooled scale within ``SCALE``): the same inputs with other targets. The log of
a price taken as ln for training and log10 for validation; a unit converted in one split. Neither is
judged under a split by time (a trend moves both by design).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding

QUANTILES = np.linspace(0.05, 0.95, 19)
FIT = 0.05  # the largest quantile's distance from the affine map, as a share of train's 5-95% spread
SCALE = 1.5  # the affine map's scale this far from 1 (either way)
TARGET_SHIFT = 1.5  # a target median's move, in train's robust standard deviations
SE_LIMIT = 6.0  # ... and in standard errors of the difference of two medians
UNMOVED = 0.5  # inputs unmoved: no feature's mean this many train standard deviations away
CONTINUOUS = 10


def pooled_map(train: np.ndarray, other: np.ndarray) -> tuple[float, float, float]:
    """The affine map ``a x + b`` from train's pooled value quantiles to ``other``'s (least squares), and
    its worst quantile's distance from the map as a share of train's 5-95% spread (inf: no spread)."""
    base, moved = np.quantile(train.ravel(), QUANTILES), np.quantile(other.ravel(), QUANTILES)
    spread = base[-1] - base[0]
    if not spread > 0:
        return 1.0, 0.0, float("inf")
    a, b = np.polyfit(base, moved, 1)
    return float(a), float(b), float(np.abs(moved - (a * base + b)).max() / spread)


def _scale_moved(a: float, halves_a: float, limits: LeakThresholds) -> bool:
    far = abs(np.log(a)) if a > 0 else np.inf
    return far >= np.log(SCALE) and far >= limits.skew_ratio * abs(np.log(max(halves_a, 1e-12)))


def input_map_warning(
    train: np.ndarray, other: np.ndarray, halves: tuple[np.ndarray, np.ndarray], split: str, limits: LeakThresholds
) -> tuple[Finding | None, dict[str, float]]:
    """Every input value of ``split`` carried from train's by one affine map of scale far from 1."""
    a, b, fit = pooled_map(train, other)
    halves_a = pooled_map(*halves)[0]
    said = {f"{split}_pooled_scale": round(a, 4), f"{split}_pooled_fit": round(fit, 4)}
    if fit > FIT or not _scale_moved(a, halves_a, limits):
        return None, said
    return (
        Finding(
            f"every {split} input value is train's under one map x -> {a:.3g} x {b:+.3g} (the 5-95% quantiles "
            f"of all its feature values lie within {fit:.1%} of train's spread from that map; between two halves "
            f"of train: {halves_a:.3g} x)",
            detail=f"another normalisation for {split} than for train: a training transform with one mean and "
            "standard deviation (ImageNet's) and an evaluation transform with others ((x - 0.5) / 0.5), or a "
            f"scaler fitted on {split} itself? The model then sees {split} inputs {a:.3g}x as wide as any it "
            "trained on. Fix: one transform, with train's statistics, for every split",
        ),
        said,
    )


def _robust(values: np.ndarray) -> tuple[float, float]:
    low, median, high = np.percentile(values, [25, 50, 75])
    return float(median), float((high - low) / 1.349)


def inputs_unmoved(train: np.ndarray, other: np.ndarray, pooled_scale: float) -> bool:
    """No feature's mean ``UNMOVED`` of train's standard deviations away, the pooled scale within ``SCALE``."""
    std = train.std(axis=0)
    varies = std > 0
    shift = np.abs(other.mean(axis=0) - train.mean(axis=0))[varies] / std[varies]
    return bool(varies.any()) and float(shift.max()) < UNMOVED and 1 / SCALE < pooled_scale < SCALE


def target_move_warning(views: ModelViews, split: str) -> tuple[Finding | None, dict[str, float]]:
    """A float target whose median moved though the inputs did not (the caller says they did not)."""
    train, other = scalar_labels(views, "train"), scalar_labels(views, split)
    if train is None or other is None or train.dtype.kind != "f" or other.dtype.kind != "f":
        return None, {}
    train, other = train.astype(np.float64).ravel(), other.astype(np.float64).ravel()
    if min(len(np.unique(train)), len(np.unique(other))) < CONTINUOUS or not np.isfinite(train).all():
        return None, {}
    (center, sigma), (moved_center, moved_sigma) = _robust(train), _robust(other[np.isfinite(other)])
    if not sigma > 0:
        return None, {}
    shift = (moved_center - center) / sigma
    standard_error = 1.2533 * np.sqrt(1 / len(train) + 1 / len(other))  # of a median, normal data
    said = {f"targets_{split}_median_shift": round(shift, 3)}
    if abs(shift) < max(TARGET_SHIFT, SE_LIMIT * standard_error):
        return None, said
    return (
        Finding(
            f"the {split} targets moved while its inputs did not: median {moved_center:.4g} against train's "
            f"{center:.4g} ({shift:+.3g} train robust standard deviations; spread {moved_sigma / sigma:.3g}x), "
            f"with every feature's mean within {UNMOVED} train standard deviations of train's",
            detail=f"the same inputs with other targets: {split}'s targets made by another script or "
            "transformation (a log in another base, another unit, a scaler fitted per split)? Its loss and "
            f"metrics then score predictions on train's scale against targets on another. Fix: one target "
            "transformation for every split",
        ),
        said,
    )


def whole_split_warnings(
    views: ModelViews, key: str, limits: LeakThresholds, halves: tuple[np.ndarray, np.ndarray], skip: set[str]
) -> tuple[list[Finding], dict[str, Any]]:
    """Per later split (not those in ``skip``, already warned per feature): an input map, or targets
    that moved while the inputs did not."""
    train = feature_matrix(views, key, "train")
    findings, report = [], {}
    for split in views.order():
        if split == "train" or split in skip or len(views.inputs[split]) < limits.leak_min_class:
            continue
        other = feature_matrix(views, key, split)
        finding, said = input_map_warning(train, other, halves, split, limits)
        report.update(said)
        if finding is None and inputs_unmoved(train, other, said[f"{split}_pooled_scale"]):
            finding, said = target_move_warning(views, split)
            report.update(said)
        findings += [finding] if finding else []
    return findings, report
