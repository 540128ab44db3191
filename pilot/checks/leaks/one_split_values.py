"""Values that fill one split and not training (``one_split_value_warnings``): what a second export or a
lookup built on training does to a later split, which no distance between examples shows.

1. **An integer input on one default value**: a scalar integer input (a user, a product, a category
   index: at least ``MIN_DISTINCT`` values in training; not a label's position) that holds one value in
   ``FILLED`` or more of a later split's examples, a value training holds too, in at most ``RARE`` of its
   own (and five times less often). Categories unseen in training were mapped to one index by a lookup's
   default (``user2idx.get(u, 0)``), and that index is a real training category: the split is scored as
   if every example were that one. Not under a split by time, where a new season or a new hit fills a
   later split by design.
2. **A text field empty in one split**: a raw string field non-empty in at least 1 - ``RARE`` of
   training's examples and empty (``""``, whitespace, None or NaN) in ``FILLED`` or more of a later
   split's, or the other way round, and that reaches the model (a training example with the field
   blanked encodes and collates to other tensors): a column missing from one split's export, filled with
   ``""``. The split then measures inputs without it. Metadata the model never reads is not judged.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, changes_the_batch
from pilot.checks.result import Finding

FILLED = 0.5  # of a later split's examples
RARE = 0.1  # of training's examples, at most
MIN_DISTINCT = 10  # values an integer input takes in training: a category, not a flag
MIN_EXAMPLES = 10


def _scalar_integers(views: ModelViews, split: str) -> dict[str, list[int]]:
    """Each input key that holds one integer per example in every example of ``split`` (not a label's
    position: ``start_positions``), its values."""
    rows = views.inputs.get(split) or []
    keys = [
        k
        for k, v in (rows[0].items() if rows else ())
        if v.ndim == 0 and v.dtype.kind in "iu" and "position" not in k and "label" not in k
    ]
    return {
        key: [int(row[key]) for row in rows] for key in keys if all(key in row and row[key].ndim == 0 for row in rows)
    }


def _default_value(views: ModelViews, split: str, train: dict[str, list[int]]) -> list[Finding]:
    findings = []
    for key, values in _scalar_integers(views, split).items():
        if key not in train or len(values) < MIN_EXAMPLES or len(set(train[key])) < MIN_DISTINCT:
            continue
        value, count = Counter(values).most_common(1)[0]
        share, train_share = count / len(values), train[key].count(value) / len(train[key])
        if share < FILLED or not 0 < train_share <= min(RARE, share / 5):  # a default is a training category
            continue
        findings.append(
            Finding(
                f"{split}'s input '{key}' is {value} in {count} of {len(values)} examples ({share:.0%}), a value "
                f"training holds in {train_share:.1%} of its own ({len(set(train[key]))} distinct values): "
                f"categories training never saw mapped to one index by a lookup's default (user2idx.get(u, {value})), "
                f"and that index is a real training category? {split} is then scored as if every such example were "
                "that one. Fix: an index of its own for unseen categories (an <unk> row, trained on some examples), "
                "or a split that shares the categories on purpose",
                split,
            )
        )
    return findings


def _empty(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    )


def _empty_shares(views: ModelViews, split: str) -> dict[str, float]:
    """Each raw field that is a string (or empty) in every example of ``split``: its share of empty values."""
    examples = views.splits.get(split) or []
    fields = set(examples[0].fields) if examples else set()
    shares = {}
    for name in sorted(fields):
        values = [e.fields.get(name) for e in examples]
        if all(isinstance(v, str) or _empty(v) for v in values) and any(isinstance(v, str) for v in values):
            shares[name] = float(np.mean([_empty(v) for v in values]))
    return shares


def _reaches_the_model(task: Any, views: ModelViews, name: str) -> bool:
    """Whether blanking ``name`` in a training example that holds it changes what collate gives."""
    example = next((e for e in views.splits["train"] if not _empty(e.fields.get(name))), None)
    return example is not None and changes_the_batch(task, example, name, "")


def _emptied_field(task: Any, views: ModelViews, split: str, train: dict[str, float]) -> list[Finding]:
    if len(views.splits.get(split) or []) < MIN_EXAMPLES:
        return []
    findings = []
    for name, share in _empty_shares(views, split).items():
        base = train.get(name)
        if base is None or not ((share >= FILLED and base <= RARE) or (base >= FILLED and share <= RARE)):
            continue
        if not _reaches_the_model(task, views, name):
            continue
        findings.append(
            Finding(
                f"raw field '{name}' is empty in {share:.0%} of {split}'s examples and {base:.0%} of training's: a "
                f"column missing from one split's export and filled with '' (pd.concat + fillna)? {split} then "
                "measures inputs without it, or training never saw them. Fix: export every split with the same "
                "columns",
                split,
            )
        )
    return findings


def one_split_value_warnings(
    task: Any, views: ModelViews, split_by: str = "group"
) -> tuple[list[Finding], dict[str, Any]]:
    if views.skipped or not views.splits.get("train"):
        return [], {}
    integers = _scalar_integers(views, "train") if split_by != "time" else {}
    empties = _empty_shares(views, "train")
    findings: list[Finding] = []
    for split in views.order():
        if split != "train":
            findings += _default_value(views, split, integers) + _emptied_field(task, views, split, empties)
    report = {"integer_inputs": sorted(integers), "text_fields": sorted(empties), "warned": len(findings)}
    return findings, report
