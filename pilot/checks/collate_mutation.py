"""A collate that changes the encoded examples it is given (``x.sub_(mean).div_(std)`` on an item's own
tensor, a label list appended to, a key popped). Encodings are computed once and kept
(``TaskData.encoded``), so each collation of an example starts from what the one before left: every
epoch trains on other inputs than the first. Two calls on the same examples then differ, which read
as a random collate (augmentation) and named no cause. A key collate adds to an item changes nothing
it reads again and is not judged."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from pilot.checks.result import Finding
from pilot.data.task import TaskData


def changed_by_collate(task: TaskData, items: list[dict]) -> list[Finding]:
    """A fail naming the first item value one call of ``task.collate`` changed, on copies of ``items``
    (the task's own encodings stay as they are); none when collate raises (the contract says it)."""
    if not items:
        return []
    given = copy.deepcopy(items)
    pairs = list(zip(given, copy.deepcopy(given)))  # each item beside its copy: collate may reorder the list
    try:
        task.collate(given)
    except Exception:  # noqa: BLE001 - the contract check reports a collate that raises
        return []
    for item, kept in pairs:
        if not isinstance(kept, dict) or not isinstance(item, dict):
            continue
        for key, value in kept.items():
            if key in item and _same(item[key], value):
                continue
            how = "is gone" if key not in item else "holds other values"
            return [
                Finding(
                    f"collate changes the encoded examples it is given: after one call, example "
                    f"{kept.get('index', '?')}'s '{key}' {how} (an in-place operation on the example's own "
                    "tensor, x.sub_(...) or x /= ..., a list appended to, a key popped). Encodings are computed "
                    "once and kept, so each epoch collates what the one before left and the model trains on "
                    "other inputs every epoch. Fix: leave the items as they are: compute on a copy "
                    "(x = item['x'] - mean) or on the stacked batch"
                )
            ]
    return []


def _same(a: Any, b: Any) -> bool:
    if torch.is_tensor(a) or torch.is_tensor(b):
        if not (torch.is_tensor(a) and torch.is_tensor(b)) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(
            torch.equal(a, b)
            or (
                a.is_floating_point()
                and torch.equal(a.isnan(), b.isnan())
                and torch.equal(a.nan_to_num(), b.nan_to_num())
            )
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b) or (a != a and b != b)  # noqa: PLR0124 - nan equals nan here
    except Exception:  # noqa: BLE001 - a value that cannot say whether it equals another: not judged
        return True
