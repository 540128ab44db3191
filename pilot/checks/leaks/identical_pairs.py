"""A pair task whose label says whether its two inputs are the same example (``identical_pair_warnings``).

A siamese or verification task compares two inputs of one shape; a positive pair built from the anchor
itself (sample i paired with i, meant: another sample of the same writer) makes "same" mean "identical", and
the model learns equality, not similarity, while every check of the loop passes. Judged on train: for two
inputs of one shape, a class whose examples hold them identical (``IDENTICAL``) while the rest's almost never
do. Augmented views of one example (SimCLR) differ and are not judged.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels
from pilot.checks.result import Finding

IDENTICAL = 0.95  # of a class's examples with their two inputs equal
ELSEWHERE = 0.05  # at most, of the other examples
MIN_EXAMPLES = 10  # of the class and of the rest
MAX_CLASSES = 20


def identical_pair_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    rows, labels = views.inputs.get("train") or [], scalar_labels(views, "train")
    if views.skipped or not rows or labels is None or len(np.unique(labels)) > MAX_CLASSES:
        return [], {}
    keys = sorted(k for k, v in rows[0].items() if v.size > 1)
    pairs = [
        (a, b)
        for a, b in combinations(keys, 2)
        if all(a in row and b in row and row[a].shape == row[b].shape for row in rows)
    ]
    findings, report = [], {}
    for a, b in pairs:
        equal = np.array([np.array_equal(row[a], row[b]) for row in rows])
        report[f"{a}={b}"] = round(float(equal.mean()), 3)
        for value in np.unique(labels):
            mine = labels == value
            if mine.sum() < MIN_EXAMPLES or (~mine).sum() < MIN_EXAMPLES:
                continue
            inside, outside = float(equal[mine].mean()), float(equal[~mine].mean())
            if inside >= IDENTICAL and outside <= ELSEWHERE:
                findings.append(
                    Finding(
                        f"the label can be read from whether the pair's '{a}' and '{b}' are the same input: they are "
                        f"identical in {inside:.0%} of train's examples labelled {value:g} and in {outside:.0%} of the "
                        "rest, so the model learns equality, not similarity (a positive pair built from the anchor "
                        "itself?). Fix: pair each anchor with another example of its class",
                        "train",
                    )
                )
    return findings, report
