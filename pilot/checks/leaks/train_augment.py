"""Training-only augmentations other than a flip that break the label (``train_augment_warnings``):

- **mixup with the labels left hard**: ``encode`` gives a training example ``lam * x + (1 - lam) * x_j``
  with another training example ``x_j`` but keeps its own hard label, so wherever ``x_j`` weighs more
  and is of another class, the input mostly shows one class and is trained as another. Found per
  transformed training example as the mix of its raw array with another training example's (least
  squares over every candidate, residual below ``MIX_RESIDUAL`` of the change); warned when mixes are at
  least ``TRANSFORMED`` of training and ``MIN_WRONG`` of them are dominated by another class's example
  while labelled with their own (mixed labels reach the loss as soft targets, not as one class each);
- **mixup with the soft targets' weights swapped** (``lam * x_i + (1 - lam) * x_j`` trained towards
  ``(1 - lam) * y_i + lam * y_j``): each raw example's class read by a nearest-neighbour classifier of a
  later split's plain examples; warned when most mixes of two classes weigh them the other way round;
- **a grayscale on a task told by colour**: a training input whose channels are equal where its raw
  array's are not (a colour axis of 3, first or last), a ``RandomGrayscale``; warned when a 5-nearest-
  neighbour classifier separates the classes at least ``SEPARABLE`` on the raw arrays and at most
  ``SAME`` on their grey versions (the weights of the grey fitted on the transformed examples):
  red and green lamps of one brightness.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels, vector_key
from pilot.checks.leaks.train_transform import TRANSFORMED, UNTOUCHED, knn_separability, raw_field
from pilot.checks.result import Finding

MIX_RESIDUAL = 1e-4  # of the change's squared norm
MIN_WRONG = 5
MAX_MIXES = 300  # transformed examples searched for a partner
MAX_PARTNERS = 3000
SEPARABLE, SAME = 0.75, 0.6


def _arrays(views: ModelViews, key: str, field: str, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw arrays in their own shape, model inputs flat, transformed flags) of a split."""
    raws = np.stack([np.asarray(e.fields[field], dtype=np.float64) for e in views.splits[split]])
    seen = np.stack([row[key].astype(np.float64).reshape(-1) for row in views.inputs[split]])
    flags = ~np.isclose(seen, raws.reshape(len(raws), -1), rtol=1e-5, atol=1e-6).all(axis=1)
    return raws, seen, flags


def _partners(flat: np.ndarray, seen: np.ndarray, rows: np.ndarray) -> dict[int, tuple[int, float]]:
    """For each transformed row, the training example it is mixed with and that example's weight."""
    candidates = flat[:MAX_PARTNERS]
    found = {}
    for i in rows[:MAX_MIXES]:
        change = seen[i] - flat[i]
        towards = candidates - flat[i]
        norms = (towards**2).sum(axis=1)
        norms[norms == 0] = np.inf
        along = towards @ change
        residual = (change**2).sum() - along**2 / norms
        j = int(np.argmin(residual))
        weight = float(along[j] / norms[j])
        if residual[j] <= MIX_RESIDUAL * (change**2).sum() and 0.0 < weight < 1.0:
            found[int(i)] = (j, weight)
    return found


def _mixup(
    views: ModelViews, raws: np.ndarray, seen: np.ndarray, flags: np.ndarray, key: str, field: str
) -> list[Finding]:
    labels = scalar_labels(views, "train")
    mixes = _partners(raws.reshape(len(raws), -1), seen, np.flatnonzero(flags))
    if len(mixes) < TRANSFORMED * min(len(flags), MAX_MIXES):
        return []
    if labels is None:  # soft targets: mixed too, with which weights?
        return _soft_mixup(views, key, field, raws, mixes)
    wrong = [(i, j, w) for i, (j, w) in mixes.items() if w > 0.5 and labels[j] != labels[i]]
    if len(wrong) < MIN_WRONG:
        return []
    i, j, w = wrong[0]
    return [
        Finding(
            f"{len(mixes)} training inputs are mixes of two training examples (mixup), each labelled with one "
            f"example's class alone: in {len(wrong)} of them the other example, of another class, weighs more (this "
            f"row: {1 - w:.2f} of its own, class {labels[i].item()}, and {w:.2f} of example "
            f"{views.splits['train'][j].index}, class {labels[j].item()})",
            "train",
            views.splits["train"][i].index,
            detail="the input mostly shows one class and is trained as another. Fix: mix the targets with the same "
            "weight (soft labels, or lam * loss(y_i) + (1 - lam) * loss(y_j))",
        )
    ]


def _hard_classes(views: ModelViews, split: str) -> np.ndarray | None:
    """A split's labels as class ids when each is one id or a one-hot vector; else None."""
    labels = views.labels.get(split) or []
    if not labels or len({label.size for label in labels}) != 1:
        return None
    if labels[0].size == 1:
        return scalar_labels(views, split)
    rows = np.stack([label.reshape(-1).astype(np.float64) for label in labels])
    one_hot = np.isclose(rows.max(axis=1), 1.0) & np.isclose(rows.sum(axis=1), 1.0) & np.isclose(rows.min(axis=1), 0)
    return rows.argmax(axis=1) if bool(one_hot.all()) else None


def _soft_mixup(views: ModelViews, key: str, field: str, raws: np.ndarray, mixes: dict) -> list[Finding]:
    """Soft targets mixed with the weights swapped: the input ``(1 - w) x_i + w x_j`` trained towards
    ``w y_i + (1 - w) y_j``. Each raw training example's class is read by a 5-nearest-neighbour classifier
    fitted on a later split's plain examples (hard labels), where it separates the classes."""
    hard = {s: _hard_classes(views, s) for s in views.order() if s != "train"}
    later = next((s for s, classes in hard.items() if classes is not None), None)
    soft = views.labels["train"]
    if later is None or len({label.size for label in soft}) != 1 or soft[0].size < 2:
        return []
    from sklearn.neighbors import KNeighborsClassifier

    plain, classes = _arrays(views, key, field, later)[0], hard[later]
    if len(np.unique(classes)) < 2 or np.unique(classes, return_counts=True)[1].min() < 5:
        return []
    if knn_separability(plain, classes) < SEPARABLE:
        return []  # the arrays do not tell the classes: no raw example's class to compare with
    own = KNeighborsClassifier(5).fit(plain.reshape(len(plain), -1), classes).predict(raws.reshape(len(raws), -1))
    swapped, kept = [], 0
    for i, (j, w) in mixes.items():
        a, b, target = int(own[i]), int(own[j]), soft[i].reshape(-1)
        if a == b or abs(w - 0.5) < 0.1 or max(a, b) >= target.size:
            continue
        as_mixed = abs(target[a] - (1 - w)) + abs(target[b] - w)
        reversed_ = abs(target[a] - w) + abs(target[b] - (1 - w))
        if reversed_ + 0.1 < as_mixed:
            swapped.append((i, j, w))
        elif as_mixed + 0.1 < reversed_:
            kept += 1
    if len(swapped) < MIN_WRONG or len(swapped) < 4 * kept:
        return []
    i, j, w = swapped[0]
    target = soft[i].reshape(-1)
    return [
        Finding(
            f"{len(mixes)} training inputs are mixes of two training examples (mixup) with soft targets whose weights "
            f"are the other way round: in {len(swapped)} of {len(swapped) + kept} the example that weighs more in the "
            f"input weighs less in the target (this row: {1 - w:.2f} of its own input, class {own[i]}, and {w:.2f} of "
            f"example {views.splits['train'][j].index}, class {own[j]}; its target {target[own[i]]:.2f} and "
            f"{target[own[j]]:.2f})",
            "train",
            views.splits["train"][i].index,
            detail="the class that dominates the input gets the smaller share of the target. Fix: mix the targets "
            "with the inputs' own weights: lam * y_i + (1 - lam) * y_j for lam * x_i + (1 - lam) * x_j",
        )
    ]


def _colour_axis(raw: np.ndarray) -> int | None:
    return 0 if raw.ndim == 3 and raw.shape[0] == 3 else (-1 if raw.ndim == 3 and raw.shape[-1] == 3 else None)


def _grayscale(views: ModelViews, raws: np.ndarray, seen: np.ndarray, flags: np.ndarray) -> list[Finding]:
    axis = _colour_axis(raws[0])
    labels = scalar_labels(views, "train")
    if axis is None or labels is None:
        return []
    colours = np.moveaxis(raws, axis if axis == -1 else 1, -1).reshape(len(raws), -1, 3)
    shown = np.moveaxis(seen.reshape(raws.shape), axis if axis == -1 else 1, -1).reshape(len(raws), -1, 3)
    grey = flags & np.isclose(shown, shown[..., :1], atol=1e-6).all(axis=(1, 2))
    grey &= ~np.isclose(colours, colours[..., :1], atol=1e-6).all(axis=(1, 2))
    if grey.sum() < max(MIN_WRONG, TRANSFORMED * len(flags)):
        return []
    weights = np.linalg.lstsq(colours[grey].reshape(-1, 3), shown[grey][..., 0].reshape(-1), rcond=None)[0]
    classes, counts = np.unique(labels, return_counts=True)
    if len(classes) < 2 or counts.min() < 5:
        return []
    apart, together = knn_separability(colours, labels), knn_separability(colours @ weights, labels)
    if apart < SEPARABLE or together > SAME:
        return []
    return [
        Finding(
            f"{int(grey.sum())} of {len(flags)} training inputs are grey versions of their colour arrays (a grayscale "
            f"applied to training only), and grey the classes cannot be told apart: a 5-nearest-neighbour classifier "
            f"separates them at {apart:.2f} balanced accuracy in colour, {together:.2f} in grey",
            detail="the classes differ by colour, which the grayscale erases: those examples carry no evidence of "
            "their label. Fix: no grayscale augmentation on a task told by colour",
        )
    ]


def train_augment_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = vector_key(views)
    later = [s for s in views.order() if s != "train"]
    if key is None or not later or "train" not in views.splits:
        return [], {}
    field = raw_field(views, key)
    if field is None:
        return [], {}
    raws, seen, flags = _arrays(views, key, field, "train")
    elsewhere = max(float(_arrays(views, key, field, s)[2].mean()) for s in later)
    report = {"raw_field": field, "transformed_share": float(flags.mean()), "elsewhere": elsewhere}
    if flags.mean() < TRANSFORMED or elsewhere > UNTOUCHED:
        return [], report
    return _mixup(views, raws, seen, flags, key, field) + _grayscale(views, raws, seen, flags), report
