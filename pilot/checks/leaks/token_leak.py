"""Target leakage through tokens (``token_leak_warnings``): for token inputs with one label per
example, a token whose presence gives the label away — in (nearly) every example of one class and
(nearly) none of the rest, at a balanced accuracy of at least ``leak_score``: the class written into
the inputs (``text + f"|{label}"``, a prompt template per class). A word that merely predicts the class
(``great`` in positive reviews) is in far fewer than every example of it, and is not warned about."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, scalar_labels
from pilot.checks.leaks.target_leak import _class_names
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData


def token_key(views: ModelViews) -> str | None:
    rows = [row for s in views.order() for row in views.inputs[s]]
    if not rows:
        return None
    if all("input_ids" in row for row in rows):
        key = "input_ids"
    else:
        integer = [k for k, v in rows[0].items() if np.issubdtype(v.dtype, np.integer) and v.ndim == 1 and v.size > 1]
        if len(integer) != 1:
            return None
        key = integer[0]
    return key if all(key in row and np.issubdtype(row[key].dtype, np.integer) for row in rows) else None


def real_tokens(row: dict[str, np.ndarray], key: str) -> list[int]:
    """A collated row's token ids at its real positions (its attention mask's 1s, when it has one)."""
    ids = row[key].reshape(-1)
    mask = row.get("attention_mask")
    if mask is not None and mask.shape == row[key].shape:
        ids = ids[mask.reshape(-1) != 0]
    return [int(t) for t in ids]


def _token_sets(views: ModelViews, key: str, split: str) -> list[set[int]]:
    return [set(real_tokens(row, key)) for row in views.inputs[split]]


def token_leak_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else token_key(views)
    if key is None:
        return [], {}
    splits = views.order()
    labels = [scalar_labels(views, s) for s in splits]
    if any(y is None for y in labels):
        return [], {}
    label = np.concatenate(labels)
    tokens = [t for s in splits for t in _token_sets(views, key, s)]
    kept = [i for i, y in enumerate(label) if y != IGNORE_INDEX]
    if len(kept) < limits.leak_min_examples or not np.all(label == np.round(label)):
        return [], {}
    classes = sorted({int(label[i]) for i in kept})
    tested = classes[1:] if len(classes) == 2 else classes
    best: tuple[float, int, int, float, float] | None = None  # (balanced accuracy, class, token, in, out)
    for cls in tested:
        members = [i for i in kept if int(label[i]) == cls]
        others = [i for i in kept if int(label[i]) != cls]
        if min(len(members), len(others)) < limits.leak_min_class:
            continue
        inside = Counter(t for i in members for t in tokens[i])
        outside = Counter(t for i in others for t in tokens[i])
        for token in inside.keys() | outside.keys():
            share_in, share_out = inside[token] / len(members), outside[token] / len(others)
            score = 0.5 * (share_in + 1.0 - share_out)
            score = max(score, 1.0 - score)
            if best is None or score > best[0]:
                best = (score, cls, token, share_in, share_out)
    if best is None:
        return [], {}
    score, cls, token, share_in, share_out = best
    if share_in < share_out and len(classes) == 2:  # the token marks the other class: said of that one
        cls, share_in, share_out = classes[0], share_out, share_in
    report = {"token_key": key, "examples": len(kept), "max_token_balanced_accuracy": round(score, 4)}
    if score < limits.leak_score:
        return [], report
    names = _class_names(task)
    name = f" '{names[cls]}'" if 0 <= cls < len(names) else ""
    shown = f" ({''.join(task.decode_tokens([token]))!r})" if task.decode_tokens is not None else ""
    return [
        Finding(
            f"token {token}{shown} of '{key}' gives the label away: it is in {share_in:.0%} of the examples of "
            f"class {cls}{name} and {share_out:.1%} of the rest (balanced accuracy {score:.3f})",
            detail="target leakage? the label written into the inputs (the class appended to the text, a "
            "template per class); drop it unless the model will have it when it predicts",
        )
    ], report
