"""A regression target that codes a category in an order its inputs do not follow
(``ordinal_code_warnings``): severities 'low' < 'medium' < 'high' coded by ``sorted(set(names))`` (a
LabelEncoder: high=0, low=1, medium=2). The target is then not monotone in what it measures: an MSE
head must learn a fold, and its rounded predictions are mostly wrong, while the loss still falls.

For a vector task's features (``vector_key``) with a float target per example: a raw string field of
3 to ``MAX_CODES`` values that is one-to-one with the target's values, coded 0, 1, 2 ... in the
alphabetical order of the values (a label encoder's codes; codes that are magnitudes, a repair cost,
or an order the user wrote, child < adult < senior, are not judged). Every order of its codes is
tried as the target of a least-squares fit of the training inputs: warned when another order leaves
at most ``BETTER`` of the alphabetical order's unexplained variance (1 - R^2) and explains at least
``GAIN`` more of it.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np

from pilot.checks.leaks.linear_leak import _counted, _unexplained
from pilot.checks.leaks.model_views import ModelViews, vector_key
from pilot.checks.result import Finding

MAX_CODES = 6
BETTER = 0.5
GAIN = 0.2
MIN_EXAMPLES = 30


def _coded_field(views: ModelViews, labels: np.ndarray) -> tuple[str, dict[str, float]] | None:
    """The string field one-to-one with the training target's values, and its code per value."""
    train = views.splits["train"]
    for name in sorted(train[0].fields):
        values = [e.fields.get(name) for e in train]
        if not all(isinstance(v, str) for v in values):
            continue
        codes: dict[str, set[float]] = {}
        for value, label in zip(values, labels.tolist()):
            codes.setdefault(value, set()).add(label)
        if 3 <= len(codes) <= MAX_CODES and all(len(c) == 1 for c in codes.values()):
            code = {value: next(iter(c)) for value, c in codes.items()}
            if len(set(code.values())) == len(code):
                return name, code
    return None


def ordinal_code_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else vector_key(views)
    counted = _counted(views, key, "train") if key is not None and "train" in views.splits else None
    if counted is None or len(counted[1]) < MIN_EXAMPLES or len(counted[1]) != len(views.splits["train"]):
        return [], {}
    x, y = counted
    found = _coded_field(views, y)
    if found is None:
        return [], {}
    field, code = found
    values = sorted(code, key=code.get)  # the categories in the order of their codes
    ranks = sorted(code.values())
    if values != sorted(values) or ranks != [float(at) for at in range(len(ranks))]:
        return [], {"field": field, "codes": code, "judged": "not a label encoder's codes (0, 1, 2 ... alphabetically)"}
    now = _unexplained(x, y)
    best, best_order = now, values
    categories = [example.fields[field] for example in views.splits["train"]]
    for order in permutations(values):
        rank_of = {value: ranks[at] for at, value in enumerate(order)}
        unexplained = _unexplained(x, np.array([rank_of[value] for value in categories]))
        if unexplained < best - 1e-12:
            best, best_order = unexplained, list(order)
    report = {"field": field, "codes": code, "unexplained": now, "best_order": best_order, "best_unexplained": best}
    if best > BETTER * now or now - best < GAIN:
        return [], report
    alphabetical = " (alphabetical: a LabelEncoder's or sorted(set(...))'s order)"
    shown = ", ".join(f"{v}={code[v]:g}" for v in values)
    finding = Finding(
        f"the target codes field {field!r} as {shown}{alphabetical}, an order the inputs do not follow: "
        f"a linear fit of the training inputs leaves {now:.0%} of it unexplained, coded in the order "
        f"{' < '.join(best_order)} {best:.0%}",
        detail="a regression on category codes in the wrong order must learn a fold and its rounded predictions "
        "are mostly wrong. Fix: code an ordinal category in its own order, e.g. "
        + ", ".join(f"{v}={r:g}" for v, r in zip(best_order, ranks)),
    )
    return [finding], report
