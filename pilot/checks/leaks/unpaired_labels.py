"""A later split whose labels do not follow its inputs as training's do (``unpaired_label_warnings``): the
validation rows' features reordered (a merge or a sort on a key) while their labels keep the old order, or
labels taken from another file. Per example nothing is wrong — the same classes, ids and counts — only the
pairing; the model learns training and scores chance on validation, which looks like a hard task.

For vector inputs and one label per example, split by group or at random (a split by time may drift by
design): 5 nearest neighbours on the features standardised by training's statistics score training by
cross-validation over its groups (``GroupKFold``: unseen groups, as validation's are) and each later split
fitted on all of training. Classes: balanced accuracy; a float target: R^2. Warned when training scores
``LEARNT`` above chance or more and the later split at most ``NEAR_CHANCE`` above it, on ``MIN_EXAMPLES``, and
(classes) ``GAP`` standard errors of the later split's accuracy below training's (a float target: training's
R^2 at least ``LEARNT_R2``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, vector_key
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX

LEARNT, NEAR_CHANCE = 0.1, 0.05  # above chance: balanced accuracy of classes; a float target's R^2 (chance 0):
LEARNT_R2 = 0.25  # ... and 3 standard errors of the later split's accuracy below training's (``GAP``)
GAP = 3.0
MIN_EXAMPLES, MAX_EXAMPLES, MAX_FEATURES, MAX_CLASSES = 30, 5000, 512, 50
NEIGHBOURS, FOLDS = 5, 5


def _scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray, later: np.ndarray, later_y: np.ndarray, classes: bool):
    """Training's cross-validated score over its groups and the later split's, and the chance level."""
    from sklearn.metrics import balanced_accuracy_score, r2_score
    from sklearn.model_selection import GroupKFold, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    model = KNeighborsClassifier(NEIGHBOURS) if classes else KNeighborsRegressor(NEIGHBOURS)
    folds = min(FOLDS, len(np.unique(groups)))
    held_out = cross_val_predict(model, x, y, groups=groups, cv=GroupKFold(folds))
    predicted = model.fit(x, y).predict(later)
    score = balanced_accuracy_score if classes else r2_score
    chance = 1.0 / len(np.unique(y)) if classes else 0.0
    return float(score(y, held_out)), float(score(later_y, predicted)), chance


def unpaired_label_warnings(views: ModelViews, split_by: str) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    order = views.order()
    if key is None or split_by == "time" or "train" not in order or len(order) < 2:
        return [], {}
    train_y = scalar_labels(views, "train")
    x = feature_matrix(views, key, "train")
    if train_y is None or not 0 < x.shape[1] <= MAX_FEATURES or len(train_y) < 2 * MIN_EXAMPLES:
        return [], {}
    kept = (train_y != IGNORE_INDEX)[:MAX_EXAMPLES]
    x, train_y = x[:MAX_EXAMPLES][kept], train_y[:MAX_EXAMPLES][kept]
    groups = np.array([str(e.group) for e in views.splits["train"][:MAX_EXAMPLES]])[kept]
    classes = not np.issubdtype(train_y.dtype, np.floating) and len(np.unique(train_y)) <= MAX_CLASSES
    if len(np.unique(groups)) < 2 or len(np.unique(train_y)) < 2:
        return [], {}
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-12
    warnings, report = [], {}
    for split in order[1:]:
        later_y = scalar_labels(views, split)
        if later_y is None or len(later_y) < MIN_EXAMPLES:
            continue
        later = (feature_matrix(views, key, split) - mean) / spread
        counted = later_y != IGNORE_INDEX
        learnt, scored, chance = _scores(
            (x - mean) / spread, train_y, groups, later[counted], later_y[counted], classes
        )
        report[split] = {"train_held_out": learnt, split: scored, "chance": chance}
        error = np.sqrt(learnt * (1 - learnt) / max(int(counted.sum()), 1)) if classes else 0.0
        apart = learnt - scored >= GAP * error if classes else learnt >= LEARNT_R2
        if learnt >= chance + LEARNT and scored <= chance + NEAR_CHANCE and apart:
            warnings.append(_finding(split, key, learnt, scored, chance, classes))
    return warnings, report


def _finding(split: str, key: str, learnt: float, scored: float, chance: float, classes: bool) -> Finding:
    measure = "balanced accuracy" if classes else "R^2"
    return Finding(
        f"{split}'s labels do not follow its inputs as training's do: 5 nearest neighbours on {key!r} fitted on "
        f"train score {scored:.2f} {measure} on {split} (chance {chance:.2f}) and {learnt:.2f} on training's own "
        "held-out groups",
        split,
        detail="inputs and labels paired in another order in that split (features merged or sorted on a key while "
        "the labels kept the old order), or labels of another file. Fix: join labels and features on the example's "
        "key, not by position",
    )
