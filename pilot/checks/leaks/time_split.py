"""Time-stamped data split at random (``time_warnings``): later splits' times inside the training range."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ordered_splits
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import TaskData


def time_warnings(task: TaskData, split_by: str, limits: LeakThresholds) -> tuple[list[Finding], dict[str, Any]]:
    examples = [e for ex in task.splits.values() for e in ex]
    if split_by == "time" or not examples or any(e.time is None for e in examples):
        return [], {}
    train = [float(e.time) for e in task.splits.get("train", [])]
    if not train:
        return [], {}
    low, high = min(train), max(train)
    per_group = defaultdict(set)
    sizes = Counter(e.group for e in examples)
    for e in examples:
        per_group[e.group].add(float(e.time))
    in_shared = sum(sizes[g] for g in sizes if sizes[g] > 1)
    group_time = in_shared >= 0.5 * len(examples) and all(len(per_group[g]) == 1 for g in sizes if sizes[g] > 1)
    report: dict[str, Any] = {"train_range": [low, high], "time_is_a_group_property": group_time}
    warnings = []
    for split in ordered_splits(task.splits):
        if split == "train" or not task.splits[split]:
            continue
        times = np.array([float(e.time) for e in task.splits[split]])
        inside = int(((times > low) & (times < high)).sum())
        share = inside / len(times)
        report[split] = {"inside_train_range": inside, "examples": len(times), "share": round(share, 4)}
        if share > limits.time_inside_share and not group_time:
            warnings.append(
                Finding(
                    f"{inside} of {len(times)} {split} times ({share:.0%}) fall inside the training range "
                    f"[{low:g}, {high:g}]: time-stamped data split by {split_by}, not by time",
                    detail="validation measures interpolation between training times, not the future; "
                    "data.split.by=time if the model will face later data",
                )
            )
    return warnings, report
