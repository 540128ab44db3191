"""A training split whose every label is one value while another split's are not
(``constant_label_findings``): answer options never shuffled in training (the right one always first),
a label field read from a column that is constant in the training file, a label mapping applied to
evaluation only. The model can then learn nothing but that one answer, and every check that trains
the subset passes on it. A fail: no training of a classifier or a scorer learns from one label value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels
from pilot.checks.result import Finding

MIN_EXAMPLES = 8  # training labels needed before one value among them all means anything
SHOWN = 5  # values of the other split named


def constant_label_findings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    """(fails, report): a fail when the training labels (one per example) are all one value and a later
    split's take several."""
    train = scalar_labels(views, "train") if "train" in views.labels else None
    if train is None or len(train) < MIN_EXAMPLES:
        return [], {"skipped": "no single label per training example" if train is None else "too few examples"}
    values = np.unique(train)
    report: dict[str, Any] = {"train_examples": int(len(train)), "train_values": int(len(values))}
    if len(values) > 1:
        return [], report
    for split in views.order():
        labels = scalar_labels(views, split) if split != "train" else None
        if labels is None or len(np.unique(labels)) < 2:
            continue
        seen = np.unique(labels)
        shown = ", ".join(repr(v.item()) for v in seen[:SHOWN]) + (" ..." if len(seen) > SHOWN else "")
        report["varied_split"] = split
        finding = Finding(
            f"every one of the {len(train)} training labels is {values[0].item()!r}, while {split}'s take "
            f"{len(seen)} values ({shown})",
            detail="the model can learn only to give that one answer: the labels reach training built "
            "otherwise than in evaluation (answer options never shuffled, a label read from a constant "
            "field, a mapping applied to one split). Fix: build every split's labels the same way",
        )
        return [finding], report
    return [], report
