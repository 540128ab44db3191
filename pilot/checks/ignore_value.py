"""Part of ``inspect``: label values below 0 other than the contract's ignore value (-100)."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData


def ignore_value_findings(task: TaskData, train: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    """Class-id labels below 0 other than -100: a loss with its own ``ignore_index`` (-1) skips them,
    but every count pilot makes (targets, accuracy) reads them as targets of a class that does not exist."""
    items = train[:8]
    labels = task.collate(items).get("labels") if items else None
    if not torch.is_tensor(labels) or labels.is_floating_point():
        return [], {}
    other = labels[(labels < 0) & (labels != IGNORE_INDEX)]
    if not other.numel():
        return [], {}
    value = int(other[0])
    return [
        Finding(
            f"labels hold {value} at {other.numel()} position(s) of the first {len(items)} training examples: "
            f"the contract's value for a position outside the loss is {IGNORE_INDEX}, and every count of targets "
            f"and of correct predictions reads {value} as a target. Fix: pad labels with {IGNORE_INDEX} "
            f"(cross_entropy's default ignore_index) instead of {value}"
        )
    ], {"other_negative_labels": other.numel()}
