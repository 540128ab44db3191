"""Step 2: audit the split: no group in two splits, no identical example in two splits.

Identity of an example is a hash of its raw content (every field, arrays by
their bytes), so a copy that arrived under another group or index is caught.
For a time split, train must end strictly before validation starts, and
validation before test.
"""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any, Dict, List

import numpy as np

from pilot.checks.result import CheckResult, Finding, summarise
from pilot.data.task import TaskData

STEP = "split_audit"


def _canonical(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "shape": value.shape, "sha1": hashlib.sha1(value.tobytes()).hexdigest()}
    if hasattr(value, "detach"):  # a tensor
        return _canonical(value.detach().cpu().numpy())
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def content_hash(fields: Dict[str, Any]) -> str:
    blob = json.dumps(_canonical(fields), sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()


def audit_split(task: TaskData, split_by: str = "group") -> CheckResult:
    findings: List[Finding] = []
    group_splits: Dict[str, set] = defaultdict(set)
    content_splits: Dict[str, Dict[str, int]] = defaultdict(dict)
    counts = {}
    for split, examples in task.splits.items():
        groups = set()
        for example in examples:
            group_splits[example.group].add(split)
            groups.add(example.group)
            content_splits[content_hash(example.fields)].setdefault(split, example.index)
        counts[split] = {"examples": len(examples), "groups": len(groups)}
    for group, splits in sorted(group_splits.items()):
        if len(splits) > 1:
            findings.append(Finding(f"group '{group}' appears in {sorted(splits)}",
                                    detail="its examples leak between splits"))
    for digest, where in content_splits.items():
        if len(where) > 1:
            placed = ", ".join(f"{s} example {i}" for s, i in sorted(where.items()))
            findings.append(Finding(f"identical example in two splits: {placed}"))
    if split_by == "time":
        bounds = {s: [e.time for e in ex] for s, ex in task.splits.items() if ex}
        order = [s for s in ("train", "val", "test") if s in bounds]
        for earlier, later in zip(order, order[1:]):
            if max(bounds[earlier]) >= min(bounds[later]):
                findings.append(Finding(f"{earlier} ends at time {max(bounds[earlier])}, not before "
                                        f"{later} starts at {min(bounds[later])}"))
    summary = ", ".join(f"{s} {c['examples']} examples / {c['groups']} groups" for s, c in counts.items())
    ok = f"split by {split_by}, no shared group or identical example: {summary}"
    return summarise(STEP, findings, ok, {"per_split": counts, "split_by": split_by})
