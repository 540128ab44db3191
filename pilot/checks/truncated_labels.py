"""A regression's targets cut to integers by collate (``truncated_label_findings``): ``encode`` gives each
example a float target (a 3.7-star rating) and collate builds ``labels`` with an integer dtype
(``torch.tensor(values, dtype=torch.long)``, copied from a classifier's collate), so 3.7 is trained as 3.

Judged for a task whose kind says regression, on training's encoded examples collated alone: the batch's
``labels`` are integers, one per example, and some scalar float that encode gives — with a fraction in
``FRACTIONAL`` of the examples or more — equals them once cut (towards zero, or down) in every example, while
no integer that encode gives equals them (a target of whole numbers by design, completed years beside the exact
age, is encode's own)."""

from __future__ import annotations

import math
from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import TaskData

FRACTIONAL = 0.2  # of the examples' values with a fraction: real numbers, not whole ones stored as floats
EXAMPLES = 200


def _scalar_floats(item: dict[str, Any]) -> dict[str, float]:
    found = {}
    for key, value in item.items():
        if torch.is_tensor(value) and value.numel() == 1 and value.is_floating_point():
            found[key] = float(value)
        elif isinstance(value, float):
            found[key] = value
    return found


def _is_integer(value: Any) -> bool:
    if torch.is_tensor(value):
        return value.numel() == 1 and not value.is_floating_point() and value.dtype != torch.bool
    return isinstance(value, int) and not isinstance(value, bool)


def truncated_label_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict]:
    if "regression" not in str(task.kind).lower() or not encoded:
        return [], {}
    labels, values, whole = [], [], []
    for item in encoded[:EXAMPLES]:
        batch_labels = task.collate([item]).get("labels")
        if not torch.is_tensor(batch_labels) or batch_labels.is_floating_point() or batch_labels.numel() != 1:
            return [], {}
        labels.append(int(batch_labels))
        values.append(_scalar_floats(item))
        whole.append({k: int(v) for k, v in item.items() if _is_integer(v)})
    if any(all(w.get(key) == label for w, label in zip(whole, labels)) for key in whole[0]):
        return [], {"labels_from_a_whole_number": True}  # encode gives the integer target itself (completed years)
    for key in values[0]:
        column = [v.get(key) for v in values]
        if any(v is None or not math.isfinite(v) for v in column):
            continue
        fractional = sum(v != int(v) for v in column)
        cut = all(label in (math.trunc(v), math.floor(v)) for label, v in zip(labels, column))
        if cut and fractional >= FRACTIONAL * len(column):
            shown = next((v, label) for v, label in zip(column, labels) if v != int(v))
            return [
                Finding(
                    f"the regression's labels are encode's '{key}' cut to integers: {shown[0]:g} is trained as "
                    f"{shown[1]} ({fractional} of {len(column)} training examples lose a fraction): collate builds "
                    "labels with an integer dtype (torch.tensor(values, dtype=torch.long), a classifier's collate). "
                    "Fix: dtype=torch.float32",
                    "train",
                )
            ], {"key": key, "fractional": fractional, "examples": len(column)}
    return [], {"examples": len(labels)}
