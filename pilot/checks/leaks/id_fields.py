"""Id-like fields shared across splits (``id_field_warnings``): a field whose values repeat within a split
and look like (or are named like) identifiers, with values also in an earlier split."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, example_digest, ordered_splits
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import TaskData

# words of a field name that say "identifier" (the name is cut at _ - . spaces and camelCase):
# patient_id, userId, session, doc, source_file...
ID_WORDS = frozenset(
    """id ids uid pid uuid guid key patient user subject session speaker author customer
client account device doc docs document conversation thread dialog dialogue source file url path
hospital site writer record participant person household visitor member owner""".split()
)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _looks_like_id(values: Sequence[Any]) -> bool:
    text = [v for v in values if isinstance(v, str)]
    if len(text) < len(values):
        return False
    shaped = sum(1 for v in text if v and not any(c.isspace() for c in v) and any(c.isdigit() for c in v))
    return shaped >= 0.9 * len(text)


def name_says_id(name: str) -> bool:
    """``patient_id``, ``userId``, ``session``, ``docid``: a word of the name is an identifier word."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    words = re.split(r"[^a-z0-9]+", words)
    return any(w in ID_WORDS or (len(w) > 2 and w.endswith("id") and w[:-2] in ID_WORDS) for w in words)


def one_to_one(pairs: Sequence[tuple[Any, Any]]) -> bool:
    forward, backward = {}, {}
    for a, b in pairs:
        if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
            return False
    return True


def id_field_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    examples = [(s, e) for s in ordered_splits(task.splits) for e in task.splits[s]]
    if not examples:
        return [], {}
    names = sorted({name for _, e in examples for name in e.fields})
    label_keys: dict[int, str] = {}
    raw_label = _raw_label_reader(task)
    warnings, report = [], {}
    for name in names:
        if not _is_scalar(examples[0][1].fields.get(name)):  # arrays, floats, lists: not ids
            continue
        values = [(s, e, e.fields.get(name)) for s, e in examples]
        if not all(_is_scalar(v) for _, _, v in values):
            continue
        plain = [v.item() if isinstance(v, np.integer) else v for _, _, v in values]
        distinct = set(plain)
        per_split = defaultdict(Counter)
        for (split, _, _), value in zip(values, plain):
            per_split[split][value] += 1
        repeats = any(c > 1 for counter in per_split.values() for c in counter.values())
        id_like = name_says_id(name) or _looks_like_id(plain)
        if not (repeats and id_like and len(distinct) >= limits.id_min_distinct):
            continue
        if one_to_one([(v, e.group) for (_, e, _), v in zip(values, plain)]):
            report[name] = "the declared group"
            continue
        if not label_keys and not views.skipped:
            label_keys = {
                id(example): example_digest({}, label)
                for split in views.order()
                for example, label in zip(views.splits[split], views.labels[split])
            }
        if label_keys and one_to_one([(v, label_keys.get(id(e))) for (_, e, _), v in zip(values, plain)]):
            report[name] = "the target (one-to-one with the encoded label)"
            continue
        if raw_label is not None and all(raw_label(e) == v for (_, e, _), v in zip(values, plain)):
            report[name] = "the target (the task's raw label)"
            continue
        order = [s for s in ordered_splits(per_split) if per_split[s]]
        shared_report = {}
        for i, later in enumerate(order[1:], start=1):
            earlier = set().union(*(per_split[s] for s in order[:i]))
            mine = set(per_split[later])
            shared = mine & earlier
            where = order[0] if i == 1 else "/".join(order[:i])
            shared_report[later] = {"values": len(mine), "shared": len(shared), "with": where}
            if len(shared) >= limits.id_min_shared and len(shared) >= limits.id_min_shared_share * len(mine):
                sample = ", ".join(repr(v) for v in sorted(shared, key=str)[: limits.listed])
                warnings.append(
                    Finding(
                        f"field '{name}': {len(shared)} of {len(mine)} {later} values also in {where}; is it the group?",
                        detail=f"e.g. {sample}; {len(distinct)} distinct values, {len(plain) / len(distinct):.1f} "
                        f"examples per value. If a value's examples belong together, make '{name}' the "
                        f"Example.group and split by group",
                    )
                )
        report[name] = shared_report
    return warnings, report


def _raw_label_reader(task: TaskData):
    """The task's declared raw label reader (``TaskData.raw_label``), if this TaskData has one."""
    reader = getattr(task, "raw_label", None)
    return reader if callable(reader) else None
