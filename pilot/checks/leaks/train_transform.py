"""A flip or rotation ``encode`` applies to training examples only that turns one class into another
(``train_transform_warnings``): a horizontal flip as augmentation on a task whose classes are left and
right, a rotation by 180 degrees on digits 6 and 9. Those training examples then carry the other
class's label; the loss still falls by memorising them, and validation (never transformed) looks
merely hard.

For a vector task's features (``vector_key``) whose examples hold a raw array of the same size (an
image, a series): the transform is found per training example, as the flip, rotation or transpose of
the raw array (its own shape, or a square) that gives what reaches the model; a *training-only*
transform is one found on at least ``TRANSFORMED`` of the training examples and on at most
``UNTOUCHED`` of every later split's. Applied to each class's mean raw array (all splits), it lands
nearer another class's mean than its own (at most ``NEARER`` of its distance to its own): that class
may become the other. Confirmed when the two classes differ by nothing but the transform: a 5-nearest-
neighbour classifier tells them apart (balanced accuracy, out of fold) at least ``SEPARABLE`` on their
raw arrays, and at most ``SAME`` on each array plus its transform (left and right arrows become one
double-headed arrow). A label-keeping flip (cats and dogs; a bird mostly framed left, a fish right)
leaves them apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels, vector_key
from pilot.checks.leaks.transformed_targets import moved_target_findings
from pilot.checks.result import Finding

TRANSFORMED = 0.2
UNTOUCHED = 0.05
NEARER = 0.75
MIN_TRANSFORMED = 10
MIN_CLASS = 5
SEPARABLE = 0.75
SAME = 0.6
MAX_PAIR_EXAMPLES = 2000


def _transforms(shape: tuple[int, ...]) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Flips and rotations of an array of ``shape`` (its last two axes; one axis: reversed)."""
    if len(shape) == 1:
        return {"reversal": lambda a: a[::-1]}
    found = {
        "horizontal flip": lambda a: a[..., :, ::-1],
        "vertical flip": lambda a: a[..., ::-1, :],
        "rotation by 180 degrees": lambda a: a[..., ::-1, ::-1],
    }
    if shape[-1] == shape[-2]:
        found["rotation by 90 degrees"] = lambda a: np.rot90(a, 1, axes=(-2, -1))
        found["rotation by 270 degrees"] = lambda a: np.rot90(a, 3, axes=(-2, -1))
        found["transpose"] = lambda a: np.swapaxes(a, -1, -2)
    return found


def raw_field(views: ModelViews, key: str) -> str | None:
    """The field every example holds as a numeric array of the model input's size."""
    rows = [(e, row) for s in views.order() for e, row in zip(views.splits[s], views.inputs[s])]
    size = rows[0][1][key].size
    for name in sorted(rows[0][0].fields):
        try:
            if all(np.asarray(e.fields.get(name), dtype=np.float64).size == size for e, _ in rows):
                return name
        except (TypeError, ValueError):
            continue
    return None


def _shape(raw: np.ndarray) -> tuple[int, ...]:
    side = int(round(raw.size**0.5))
    return raw.shape if raw.ndim >= 2 else ((side, side) if side * side == raw.size else raw.shape)


def _found(views: ModelViews, key: str, field: str, split: str) -> list[str | None]:
    """Per example of ``split``: the transform giving its model input from its raw array ("" when the
    input is the raw array, None when no flip or rotation gives it)."""
    out: list[str | None] = []
    for example, row in zip(views.splits[split], views.inputs[split]):
        raw = np.asarray(example.fields[field], dtype=np.float64)
        raw = raw.reshape(_shape(raw))
        seen = row[key].astype(np.float64).reshape(-1)
        if _same(seen, raw.reshape(-1)):
            out.append("")
            continue
        out.append(
            next((name for name, op in _transforms(raw.shape).items() if _same(seen, op(raw).reshape(-1))), None)
        )
    return out


def _same(seen: np.ndarray, raw: np.ndarray) -> bool:
    """Whether the model's input is the raw array, or the raw array scaled and shifted (x * 2 - 0.5, a
    normalisation: one positive scale and one shift for the whole array)."""
    if np.allclose(seen, raw, rtol=1e-5, atol=1e-6):
        return True
    seen, raw = seen - seen.mean(), raw - raw.mean()
    norms = float(np.linalg.norm(seen) * np.linalg.norm(raw))
    return norms > 0 and float(seen @ raw) / norms >= 1 - 1e-9


def knn_separability(arrays: np.ndarray, labels: np.ndarray) -> float:
    """Out-of-fold balanced accuracy of a 5-nearest-neighbour classifier of the labels from the arrays
    (flattened): how well the arrays alone tell the classes apart."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier

    arrays, labels = arrays[:MAX_PAIR_EXAMPLES], labels[:MAX_PAIR_EXAMPLES]
    folds = int(min(5, np.unique(labels, return_counts=True)[1].min()))
    predicted = cross_val_predict(KNeighborsClassifier(5), arrays.reshape(len(arrays), -1), labels, cv=folds)
    return float(balanced_accuracy_score(labels, predicted))


def _separability(raws: np.ndarray, labels: np.ndarray, op: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """How well two classes are told apart on their raw arrays, and on each array plus its transform
    (what the transform cannot change)."""
    return knn_separability(raws, labels), knn_separability(raws + op(raws), labels)


def _named(class_names: list[str] | None) -> Callable[[Any], str]:
    names = list(class_names or [])
    return lambda c: names[int(c)] if names and 0 <= int(c) < len(names) else str(c)


def _regression_targets(views: ModelViews, field: str, name: str, found: dict[str, list]) -> tuple[list, dict]:
    """The transformed training examples and the untransformed ones, (raw array, target) each, judged by
    ``transformed_targets``."""
    transformed, plain = [], []
    for split, how in found.items():
        for example, label, seen in zip(views.splits[split], scalar_labels(views, split), how):
            raw = np.asarray(example.fields[field], dtype=np.float64)
            pair = (raw.reshape(_shape(raw)), float(label))
            (transformed if seen == name else plain if seen == "" else []).append(pair)
    op = _transforms(transformed[0][0].shape)[name] if transformed else None
    return moved_target_findings(name, op, field, transformed, plain)


def train_transform_warnings(views: ModelViews, class_names: list[str] | None = None) -> tuple[list[Finding], dict]:
    key = vector_key(views)
    later = [s for s in views.order() if s != "train"]
    if key is None or not later or scalar_labels(views, "train") is None:
        return [], {}
    field = raw_field(views, key)
    if field is None:
        return [], {}
    found = {s: _found(views, key, field, s) for s in ["train", *later]}
    train = Counter(name for name in found["train"] if name)
    report: dict[str, Any] = {"raw_field": field, "transforms_in_train": dict(train)}
    if not train:
        return [], report
    name, count = train.most_common(1)[0]
    elsewhere = max(sum(1 for f in found[s] if f) / max(1, len(found[s])) for s in later)
    if count < max(MIN_TRANSFORMED, TRANSFORMED * len(found["train"])) or elsewhere > UNTOUCHED:
        return [], report
    if np.issubdtype(scalar_labels(views, "train").dtype, np.floating):  # a regression: is the target moved too?
        findings, report["targets"] = _regression_targets(views, field, name, found)
        return findings, report
    raws, labels = [], []
    for split in views.order():
        split_labels = scalar_labels(views, split)
        for example, label in zip(views.splits[split], split_labels if split_labels is not None else []):
            raw = np.asarray(example.fields[field], dtype=np.float64)
            raws.append(raw.reshape(_shape(raw)))
            labels.append(label.item())
    op, labels_array = _transforms(raws[0].shape)[name], np.array(labels)
    means = {c: np.mean([r for r, y in zip(raws, labels) if y == c], axis=0) for c in set(labels)}
    means = {c: m for c, m in means.items() if (labels_array == c).sum() >= MIN_CLASS}
    turned = []
    for c, mean in means.items():
        moved = op(mean)
        distances = {d: float(np.linalg.norm(moved - other)) for d, other in means.items()}
        nearest = min(distances, key=distances.get)
        if nearest != c and distances[nearest] <= NEARER * distances[c]:
            pair = np.isin(labels_array, [c, nearest])
            apart, together = _separability(np.stack(raws)[pair], labels_array[pair], op)
            report.setdefault("separability", {})[f"{c}->{nearest}"] = {"raw": apart, "with_transform": together}
            if apart >= SEPARABLE and together <= SAME:
                turned.append((c, nearest, apart, together))
    report["classes_turned"] = [[str(c), str(d)] for c, d, *_ in turned]
    if not turned:
        return [], report
    named = _named(class_names)
    pairs = ", ".join(f"{named(c)} -> {named(d)}" for c, d, *_ in turned)
    apart, together = turned[0][2:]
    finding = Finding(
        f"a {name} applied to training examples only ({count} of {len(found['train'])} training inputs are the "
        f"{name} of their field {field!r}, {elsewhere:.0%} of {', '.join(later)}'s) turns one class into another: "
        f"the {name} of a class's mean {field!r} lies nearest another class's mean ({pairs}), and the classes "
        f"differ by nothing else (told apart at {apart:.2f} balanced accuracy on the raw arrays, {together:.2f} "
        f"on each plus its {name})",
        detail="an augmentation that changes what the label means (a horizontal flip of left/right arrows, a "
        "rotation of 6 and 9): those examples are trained on the other class's label. Fix: an augmentation that "
        "keeps the label, or change the label with it",
    )
    return [finding], report
