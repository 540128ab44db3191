"""Target leakage (``target_leak_warnings``): one input feature that gives the label away, by |correlation|,
by a single threshold's balanced accuracy for one class against the rest, or, for a code (few distinct
values, in no order: a ward, a department), by looking the label up from its value (each value's most
frequent class, balanced accuracy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData


def best_threshold_balanced_accuracy(features: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """Best balanced accuracy of one threshold (either direction) per feature column (axis 1) and
    per class (``positives``: examples x classes, 1 for a member): returns classes x features."""
    n = len(features)
    order = np.argsort(features, axis=0, kind="stable")
    values = np.take_along_axis(features, order, axis=0)
    cut = values[1:] > values[:-1]  # only between distinct values
    scores = []
    for positive in positives.T:
        pos_below = np.cumsum(positive[order], axis=0)[:-1]  # rows 0..i fall below cut i
        neg_below = np.arange(1, n)[:, None] - pos_below
        total_pos, total_neg = positive.sum(), n - positive.sum()
        score = 0.5 * ((total_pos - pos_below) / total_pos + neg_below / total_neg)
        score = np.where(cut, np.maximum(score, 1.0 - score), 0.5)
        scores.append(score.max(axis=0) if len(score) else np.full(features.shape[1], 0.5))
    return np.array(scores).reshape(len(scores), features.shape[1])


# a label that many features each give away (every pixel of a night image is darker) is what the inputs
# are about, not a column recorded with the outcome: at least this many features, and this share of them
SPREAD_MIN = 8
SPREAD_SHARE = 0.1


def target_leak_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    if key is None:
        return [], {}
    features = int(np.prod(views.inputs[views.order()[0]][0][key].shape))
    if features > limits.max_vector_features:
        return [], {"skipped": f"{features} features > max_vector_features {limits.max_vector_features}"}
    splits = views.order()
    labels = [scalar_labels(views, s) for s in splits]
    if any(y is None for y in labels):
        return [], {}
    features = np.concatenate([feature_matrix(views, key, s) for s in splits])
    label = np.concatenate(labels).astype(np.float64)
    counted = label != IGNORE_INDEX  # an example outside the loss has no label to leak
    features, label = features[counted], label[counted]
    if len(label) < limits.leak_min_examples or features.shape[1] == 0:
        return [], {}
    names = list(task.info.get("feature_names") or [])
    if len(names) != features.shape[1]:
        names = [f"{key}[{j}]" for j in range(features.shape[1])]
    corr = _label_correlation(features, label)
    steps = np.concatenate([[e.time if e.time is not None else e.index for e in views.splits[s]] for s in splits])
    series = _same_series(features, label, steps[counted].astype(np.float64))  # the label, read a step later
    corr = np.where(series, 0.0, corr)
    separation, best_class = _threshold_separation(features, label, limits)
    measured = _measurements_of_one_class(features, label, separation, best_class, limits)
    lookup = _lookup_separation(features, label, limits)
    telling = (corr >= limits.leak_score) | (separation >= limits.leak_score)
    spread = int(telling.sum()) >= max(SPREAD_MIN, SPREAD_SHARE * features.shape[1])
    warnings = (
        [] if spread else _leak_findings(task, names, corr, np.where(measured, 0.5, separation), best_class, limits)
    )
    warnings += _lookup_findings(names, features, np.where(telling, 0.5, lookup), limits)
    top = int(np.argmax(np.maximum(np.maximum(corr, separation), lookup)))
    report = {
        "features": int(features.shape[1]),
        "examples": int(len(label)),
        "max_abs_correlation": round(float(corr.max()), 4),
        "max_threshold_balanced_accuracy": round(float(separation.max()), 4),
        "max_lookup_balanced_accuracy": round(float(lookup.max()), 4),
        "most_telling_feature": names[top],
        "separate_one_class_only": [names[j] for j in np.flatnonzero(measured)],  # not warned: see below
        "label_is_a_reading_of": [names[j] for j in np.flatnonzero(series)],  # a series' own persistence
        "label_spread_over_features": int(telling.sum()) if spread else 0,  # the content itself: not warned
    }
    return warnings, report


SAME_SERIES = 0.5  # of the examples: labels found among other examples' values of one feature


def _same_series(features: np.ndarray, label: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Per feature: whether most labels are that feature's value in a *later* example (to float32's
    precision; ``steps``: each example's time, else its index), never their own: the label is the next
    reading of a series whose last readings are the inputs (a forecast from lags), which the next window
    holds as an input. Its correlation with that feature is the series' persistence (an AR process: 0.99),
    not a column recorded with the outcome (the example's own label) nor a later reading an earlier example
    was given (an earlier example holding the label: the future leaked). Continuous labels only (mostly
    distinct values: class ids are found anywhere)."""
    series = np.zeros(features.shape[1], dtype=bool)
    if len(np.unique(label)) < 0.5 * len(label):
        return series
    for j in range(features.shape[1]):
        column = features[:, j]
        tolerance = 1e-5 * max(float(np.abs(column).max()), 1e-12)
        order = np.argsort(column, kind="stable")
        values = column[order]
        at = np.clip(np.searchsorted(values, label), 1, len(values) - 1)
        nearer = np.where(np.abs(values[at] - label) <= np.abs(values[at - 1] - label), at, at - 1)
        holder = order[nearer]  # the example whose value of this feature is nearest the label
        found = (np.abs(column[holder] - label) <= tolerance) & (np.abs(column - label) > tolerance)
        series[j] = (found & (steps[holder] > steps)).mean() >= SAME_SERIES
    return series


def _label_correlation(features: np.ndarray, label: np.ndarray) -> np.ndarray:
    """|Pearson correlation| of each feature column with the label (0 for a constant feature or label); for a
    continuous label, or of their ranks where that is higher (Spearman's): a feature computed from the target
    by a monotone map (charges ~ exp(length of stay)) follows its order, not its line."""
    pearson = _pearson(features, label)
    if len(np.unique(label)) < SAME_SERIES * len(label):  # class ids: their order means nothing
        return pearson
    ranks = np.argsort(np.argsort(features, axis=0, kind="stable"), axis=0).astype(np.float64)
    return np.maximum(pearson, _pearson(ranks, np.argsort(np.argsort(label, kind="stable")).astype(np.float64)))


def _pearson(features: np.ndarray, label: np.ndarray) -> np.ndarray:
    std = features.std(axis=0)
    centred = (features - features.mean(axis=0)) * (std > 0)
    label_std = label.std()
    corr = np.zeros(features.shape[1])
    if label_std > 0:
        corr = np.abs(centred.T @ (label - label.mean())) / (len(label) * np.where(std > 0, std, 1.0) * label_std)
    return corr


def _threshold_separation(
    features: np.ndarray, label: np.ndarray, limits: LeakThresholds
) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: the best single-threshold balanced accuracy for one class against the rest, and that
    class (0.5 and nan where no class has enough examples on both sides)."""
    integral = np.all(label == np.round(label))
    classes = np.unique(label) if integral else np.array([])
    if len(classes) == 2:
        classes = classes[1:]
    separation = np.full(features.shape[1], 0.5)
    best_class = np.full(features.shape[1], np.nan)
    tested = [c for c in classes if min((label == c).sum(), (label != c).sum()) >= limits.leak_min_class]
    if tested:
        positives = np.stack([(label == c) for c in tested], axis=1).astype(np.int64)
        scores = best_threshold_balanced_accuracy(features, positives)
        separation = scores.max(axis=0)
        best_class = np.array(tested)[scores.argmax(axis=0)]
    return separation, best_class


def _lookup_separation(features: np.ndarray, label: np.ndarray, limits: LeakThresholds) -> np.ndarray:
    """Per feature: the balanced accuracy of predicting each example's class as the most frequent class
    of its value, for a code (at least ``lookup_per_value`` examples per distinct value, class labels);
    0.5 elsewhere. A code recorded with the outcome fixes it whatever its numbering."""
    scores = np.full(features.shape[1], 0.5)
    classes, label_ids = np.unique(label, return_inverse=True)
    if not np.all(label == np.round(label)) or len(classes) < 2:
        return scores
    if min(np.bincount(label_ids)) < limits.leak_min_class:
        return scores
    for j in range(features.shape[1]):
        values, value_ids = np.unique(features[:, j], return_inverse=True)
        if len(values) < 2 or len(values) * limits.lookup_per_value > len(label):
            continue
        table = np.zeros((len(values), len(classes)))
        np.add.at(table, (value_ids, label_ids), 1)
        predicted = table.argmax(axis=1)[value_ids]
        recalls = [np.mean(predicted[label_ids == c] == c) for c in range(len(classes))]
        scores[j] = float(np.mean(recalls))
    return scores


def _lookup_findings(
    names: list[str], features: np.ndarray, lookup: np.ndarray, limits: LeakThresholds
) -> list[Finding]:
    """One warning per code whose value alone gives the label away (and that no other measure named)."""
    return [
        Finding(
            f"feature '{names[j]}' gives the label away: the class looked up from its value (each of its "
            f"{len(np.unique(features[:, j]))} values -> its most frequent class) has balanced accuracy {lookup[j]:.3f}",
            detail="target leakage? a code recorded with (or after) the label, e.g. where the outcome sent "
            "the case; drop it unless the model will have it when it predicts",
        )
        for j in np.flatnonzero(lookup >= limits.leak_score)
    ]


def _measurements_of_one_class(
    features: np.ndarray, label: np.ndarray, separation: np.ndarray, best_class: np.ndarray, limits: LeakThresholds
) -> np.ndarray:
    """Per feature: True where a measurement sets one class of three or more apart from the rest but
    does not give the whole label away (|correlation| below the limit), and varies among the other
    classes' examples (more distinct values there than the task has classes). Genuine data does that
    (Iris: petal length sets setosa apart). A leak is a copy of the label (|correlation|), or a value
    recorded with the outcome: a flag or code, or a number that is the same for every other class
    (0 unless readmitted), and those are still warned about."""
    classes = np.unique(label)
    measured = np.zeros(features.shape[1], dtype=bool)
    if len(classes) < 3:
        return measured
    corr = _label_correlation(features, label)
    for j in np.flatnonzero((separation >= limits.leak_score) & (corr < limits.leak_score)):
        others = features[label != best_class[j], j]
        measured[j] = len(np.unique(others)) > len(classes)
    return measured


def _leak_findings(
    task: TaskData,
    names: list[str],
    corr: np.ndarray,
    separation: np.ndarray,
    best_class: np.ndarray,
    limits: LeakThresholds,
) -> list[Finding]:
    """One warning per feature at or above ``leak_score``, saying how it gives the label away."""
    class_names = _class_names(task)
    warnings = []
    for j in np.flatnonzero((corr >= limits.leak_score) | (separation >= limits.leak_score)):
        parts = []
        if corr[j] >= limits.leak_score:
            parts.append(f"|correlation| {corr[j]:.3f} with the label (of values or of their order)")
        if separation[j] >= limits.leak_score:
            cls = int(best_class[j])
            name = f" '{class_names[cls]}'" if 0 <= cls < len(class_names) else ""
            parts.append(
                f"one threshold separates class {cls}{name} from the rest at balanced accuracy {separation[j]:.3f}"
            )
        warnings.append(
            Finding(
                f"feature '{names[j]}' gives the label away: {' and '.join(parts)}",
                detail="target leakage? a feature computed from (or recorded after) the label; "
                "drop it unless the model will have it when it predicts",
            )
        )
    return warnings


def _class_names(task: TaskData) -> list[str]:
    """Class names by id: ``TaskData.names()`` where this TaskData has it, else ``info["class_names"]``."""
    names = getattr(task, "names", None)
    if callable(names):
        return list(names())
    return [str(n) for n in (task.info.get("class_names") or [])]
