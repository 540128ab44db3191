"""A later split whose labels do not follow its inputs as train's do (``label_relation_warnings``).

Validation labels shuffled apart from their inputs (a ``df.sample(frac=1)`` after the label column was
taken out, a merge by position on another order) leave training intact and make every validation number
chance; no other check reads the relation between a split's inputs and its labels. Measured for a vector
task with class labels: each example's 5 nearest training examples (standardised features) vote its label.
Trained on one half of train's groups, they give the other half its labels well above the most frequent
class's share (the inputs do predict the labels); a later split whose labels they give at about that
share, far below the held-out half's, is warned about. Not for a split by time (a later population may
truly differ) nor where the inputs predict little.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels, train_group_halves, vector_key
from pilot.checks.leaks.relation_causes import said_cause
from pilot.checks.result import Finding

NEIGHBOURS = 5
REFERENCES, QUERIES = 2000, 1000  # at most: the distances stay a few million
PREDICTS = 0.2  # held-out train above the majority share by at least this: the inputs predict the labels
NEAR_CHANCE = 1 / 3  # a split within this share of that margin above the majority share: at chance
MIN_EXAMPLES = 30
SIGNIFICANT = 2.5  # standard errors of the held-out share the split falls below it by
MAX_CLASSES = 50


def _votes(reference: np.ndarray, labels: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The most frequent label among each query's nearest references (ties to the smaller label)."""
    distances = (queries**2).sum(1)[:, None] - 2 * queries @ reference.T + (reference**2).sum(1)[None, :]
    nearest = np.argpartition(distances, min(NEIGHBOURS, len(reference) - 1), axis=1)[:, :NEIGHBOURS]
    classes = np.unique(labels)
    counts = (labels[nearest][:, :, None] == classes[None, None, :]).sum(1)
    return classes[counts.argmax(1)]


def label_relation_warnings(
    views: ModelViews, split_by: str = "group", class_names: list[str] | None = None
) -> tuple[list[Finding], dict[str, Any]]:
    if split_by == "time" or views.skipped:
        return [], {}
    key = vector_key(views)
    labels = scalar_labels(views, "train") if key else None
    if key is None or labels is None or len(labels) < 2 * MIN_EXAMPLES:
        return [], {}
    if not np.all(np.mod(labels.astype(np.float64), 1) == 0) or not 2 <= len(np.unique(labels)) <= MAX_CLASSES:
        return [], {}  # class ids only: a regression's "label" is no vote
    rng = np.random.default_rng(0)
    train = raw_train = feature_matrix(views, key, "train")
    mean, std = train.mean(0), train.std(0)
    scale = np.where(std > 0, std, 1.0)
    train = (train - mean) / scale
    majority = float(np.bincount(labels.astype(np.int64) - int(labels.min())).max() / len(labels))
    first = train_group_halves(views)
    second = ~first
    if first.sum() < MIN_EXAMPLES or second.sum() < MIN_EXAMPLES:
        return [], {}
    held = float((_votes(train[first], labels[first], train[second]) == labels[second]).mean())
    report: dict[str, Any] = {
        "feature_key": key,
        "majority_share": round(majority, 3),
        "train_held_out": round(held, 3),
    }
    if held < majority + PREDICTS:
        return [], report
    keep = rng.permutation(len(train))[:REFERENCES]
    findings = []
    for split in views.order():
        other = scalar_labels(views, split) if split != "train" else None
        if other is None or len(other) < MIN_EXAMPLES:
            continue
        pick = rng.permutation(len(other))[:QUERIES]
        raw = feature_matrix(views, key, split)[pick]

        def vote(queries: np.ndarray) -> np.ndarray:
            return _votes(train[keep], labels[keep], (queries - mean) / scale)

        votes = vote(raw)
        share = float((votes == other[pick]).mean())
        report[split] = round(share, 3)
        noise = SIGNIFICANT * math.sqrt(held * (1 - held) / len(pick))
        if share - majority <= NEAR_CHANCE * (held - majority) and held - share > noise:
            enough = held - NEAR_CHANCE * (held - majority)  # undone, the cause gives the split its labels back
            cause = said_cause(split, votes, other[pick], raw, vote, raw_train, enough, class_names)
            findings.append(Finding(cause or _shuffled(split, key, held, share, majority), split))
    return findings, report


def _shuffled(split: str, key: str, held: float, share: float, majority: float) -> str:
    about = "about" if share >= majority - 0.05 else "below"
    return (
        f"{split}'s labels do not follow its inputs as train's do: the {NEIGHBOURS} nearest training "
        f"examples (standardised '{key}') give {held:.0%} of held-out training examples their label but "
        f"{share:.0%} of {split}'s, {about} what the most frequent class alone gives ({majority:.0%}). "
        f"{split}'s labels were shuffled apart from its inputs (rows reordered after the labels were taken "
        f"out, a merge by position), or {split} comes from another population: every number measured on "
        f"it would be chance. Fix: keep each example's label with its inputs when the split is read"
    )
