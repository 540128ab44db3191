"""Colour channels in another order in a later split (``channel_order_warnings``): a validation folder
decoded by ``cv2.imread`` (BGR) while training's was decoded by PIL (RGB), the same normalisation after.
Every pixel keeps its value range, so no per-feature scale moves; what moves is which channel is bright
for which class: a tomato's red is the validation image's blue.

For a classification task whose input holds images with three channels (first or last axis of an
example's array): each channel standardised over its split, then per class and channel the 5%, 50% and
95% quantiles of its pixels (at most ``EXAMPLES`` examples per class, ``PIXELS`` pixels each). A later
split whose quantiles match training's far better with the channels permuted (the mean distance at
least ``RATIO`` times smaller than in the stored order) is warned, naming the order.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.result import Finding

QUANTILES = (0.05, 0.5, 0.95)
EXAMPLES = 64  # per class and split
PIXELS = 4096  # per example, drawn at fixed positions
RATIO = 1.8  # the stored order this many times further from training than the best permutation
MIN_PER_CLASS = 5
NAMES = {(2, 1, 0): "BGR (cv2.imread without cv2.cvtColor)"}


def _image_key(views: ModelViews) -> tuple[str, int] | None:
    """The input key holding (3, H, W) or (H, W, 3) images, and its channel axis."""
    for key, value in (views.inputs.get("train") or [{}])[0].items():
        if value.ndim == 3 and value.shape[0] == 3 and min(value.shape[1:]) > 3:
            return key, 0
        if value.ndim == 3 and value.shape[-1] == 3 and min(value.shape[:2]) > 3:
            return key, 2
    return None


def _class_quantiles(views: ModelViews, split: str, key: str, axis: int) -> dict[int, np.ndarray] | None:
    """Class -> (3 channels x quantiles) of its pixels, each channel standardised over the split."""
    rows, labels = views.inputs.get(split) or [], views.labels.get(split) or []
    classes: dict[int, list[np.ndarray]] = {}
    rng = np.random.default_rng(0)
    for row, label in zip(rows, labels):
        label = np.asarray(label)
        image = row.get(key)
        if image is None or label.size != 1 or label.dtype.kind not in "iu" or image.shape != rows[0][key].shape:
            return None
        pixels = np.moveaxis(image, axis, 0).reshape(3, -1).astype(np.float64)
        chosen = classes.setdefault(int(label.reshape(-1)[0]), [])
        if len(chosen) < EXAMPLES:
            keep = rng.choice(pixels.shape[1], PIXELS, replace=False) if pixels.shape[1] > PIXELS else slice(None)
            chosen.append(pixels[:, keep])
    if not classes:
        return None
    every = np.concatenate([np.concatenate(c, axis=1) for c in classes.values()], axis=1)
    mean, std = every.mean(axis=1, keepdims=True), every.std(axis=1, keepdims=True)
    if not (std > 0).all():
        return None
    return {
        k: np.quantile((np.concatenate(c, axis=1) - mean) / std, QUANTILES, axis=1).T
        for k, c in classes.items()
        if len(c) >= MIN_PER_CLASS
    }


def _distances(train: dict[int, np.ndarray], other: dict[int, np.ndarray]) -> dict[tuple[int, ...], float]:
    shared = [k for k in train if k in other]
    return {
        order: float(np.mean([np.abs(other[k][list(order)] - train[k]).max() for k in shared]))
        for order in itertools.permutations(range(3))
    }


def channel_order_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    found = _image_key(views) if not views.skipped else None
    if found is None:
        return [], {}
    key, axis = found
    train = _class_quantiles(views, "train", key, axis)
    if not train or len(train) < 2:
        return [], {}
    findings, report = [], {"image_key": key}
    for split in views.order():
        other = _class_quantiles(views, split, key, axis) if split != "train" else None
        if not other or len(set(train) & set(other)) < 2:
            continue
        distance = _distances(train, other)
        best = min(distance, key=lambda order: (distance[order], order != (0, 1, 2)))
        report[f"{split}_distance"] = {"stored": round(distance[(0, 1, 2)], 3), "best": round(distance[best], 3)}
        if best == (0, 1, 2) or distance[(0, 1, 2)] < RATIO * distance[best]:
            continue
        named = NAMES.get(best, f"channel order {list(best)}")
        findings.append(
            Finding(
                f"{split}'s images look like training's with their colour channels in another order: read as "
                f"{list(best)} ({named}) each class's pixel quantiles per channel lie {distance[best]:.3g} from "
                f"training's, as stored {distance[(0, 1, 2)]:.3g} (channels standardised per split; '{key}'). "
                f"{split} was decoded by another library than training (cv2.imread gives BGR, PIL RGB)? The model "
                "then sees other colours for every class. Fix: decode every split alike (cv2.cvtColor(image, "
                "cv2.COLOR_BGR2RGB))",
                split,
            )
        )
    return findings, report
