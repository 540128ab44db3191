"""Training images that reach a later split mirrored or rotated (``transformed_copy_warnings``).

A data set "enlarged" offline — every photo saved again flipped and rotated under a new file name — and
split afterwards puts copies of training images in validation under other ids: identical-example checks
see other pixels, and every number measured there is on images the model trained on. What reaches the
model for each example is compared exactly with train's under the seven other symmetries of a square
(flips, quarter turns, transposes of its last two axes, or its first two where the last holds the
channels). A warning: a later split with at least ``MIN_COPIES`` such copies and ``MIN_SHARE`` of its
examples; images of few distinct values (binary shapes, whose turns can meet by chance) are not judged.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.result import Finding

MIN_SIDE = 4  # pixels along each spatial axis
MIN_DISTINCT = 16  # values an image needs (fewer: turns of a binary shape meet by chance)
MIN_COPIES, MIN_SHARE = 3, 0.02
CHANNELS_LAST = (1, 3, 4)

SYMMETRIES = {
    "mirrored left-right": lambda a: a[..., ::-1],
    "mirrored top-bottom": lambda a: a[..., ::-1, :],
    "rotated 90°": lambda a: np.rot90(a, 1, axes=(-2, -1)),
    "rotated 180°": lambda a: np.rot90(a, 2, axes=(-2, -1)),
    "rotated 270°": lambda a: np.rot90(a, 3, axes=(-2, -1)),
    "transposed": lambda a: np.swapaxes(a, -2, -1),
    "anti-transposed": lambda a: np.rot90(np.swapaxes(a, -2, -1), 2, axes=(-2, -1)),
}


def _image_key(views: ModelViews) -> str | None:
    """The first input whose every training example is an image: spatial axes of ``MIN_SIDE`` or more."""
    first = next(iter(views.inputs.get("train", [])), None) or {}
    for key, value in first.items():
        if isinstance(value, np.ndarray) and value.ndim in (2, 3) and _spatial(value) is not None:
            return key
    return None


def _spatial(value: np.ndarray) -> np.ndarray | None:
    """The array with its two spatial axes last (channels-last moved first), or None where it has none."""
    if value.ndim == 3 and value.shape[-1] in CHANNELS_LAST and value.shape[0] not in CHANNELS_LAST:
        value = np.moveaxis(value, -1, 0)
    if value.ndim < 2 or min(value.shape[-2:]) < MIN_SIDE:
        return None
    return value


def _digest(value: np.ndarray) -> str:
    """A fingerprint of the image from a grid of about 16 x 16 of its pixels (equal images give equal ones;
    a match is then compared whole): large images cost no full hash per symmetry."""
    step = max(1, min(value.shape[-2:]) // 16)
    grid = np.ascontiguousarray(value[..., ::step, ::step])
    return hashlib.sha1(str((value.shape, value.dtype.str)).encode() + grid.tobytes()).hexdigest()


def transformed_copy_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else _image_key(views)
    if key is None:
        return [], {}
    train: dict[str, list[tuple[int, np.ndarray]]] = {}
    for example, inputs in zip(views.splits["train"], views.inputs["train"]):
        image = _spatial(np.asarray(inputs.get(key)))
        if image is not None:
            train.setdefault(_digest(image), []).append((example.index, image))
    findings, report = [], {"key": key}
    for split in views.order():
        if split == "train":
            continue
        copies: list[tuple[int, int, str]] = []
        for example, inputs in zip(views.splits[split], views.inputs[split]):
            image = _spatial(np.asarray(inputs.get(key)))
            if image is None or len(np.unique(image)) < MIN_DISTINCT:
                continue
            for name, turn in SYMMETRIES.items():
                turned = turn(image)
                if np.array_equal(turned, image):  # a symmetric image: an identical copy, said elsewhere
                    continue
                match = next((i for i, kept in train.get(_digest(turned), []) if np.array_equal(kept, turned)), None)
                if match is not None:
                    copies.append((example.index, match, name))
                    break
        report[split] = len(copies)
        total = len(views.splits[split])
        if len(copies) >= MIN_COPIES and len(copies) >= MIN_SHARE * total:
            index, of, name = copies[0]
            findings.append(
                Finding(
                    f"{len(copies)} of {total} {split} examples are training images mirrored or rotated "
                    f"(e.g. {split} example {index}, {name}, is train example {of}, exactly, as '{key}' reaches the "
                    "model): copies made before the split (flipped or rotated files saved under new names) put "
                    f"images the model trains on in {split}, so every number measured there is on seen data. "
                    "Fix: augment after the split, or give each copy its original's group (data.split.by=group)",
                    split,
                    index,
                )
            )
    return findings, report
