"""Identities made of several fields, shared across splits (``composite_id_warnings``).

A person is often recorded without an id: a first name, a last name and a birth year, each shared by
many people, together name one. Split by another group (a session, a visit), one person's rows land
on both sides, and a label that belongs to the person (churn, a diagnosis) is learnt by recognising
them. No single field is id-like, so ``id_fields`` cannot see it.

For every pair and triple of the examples' scalar fields (strings and integers, at most
``MAX_FIELDS`` fields, each with two or more values): the combination is a candidate identity when it
has at least ``id_min_distinct`` values, more than any of its fields alone, repeats within a split,
and is not the declared group. It is warned about when at least ``id_min_shared`` (and
``id_min_shared_share``) of a later split's combinations are also in an earlier split *and* the
examples behind those shared values carry the earlier split's label at least ``AGREEMENT`` of the
time, far above the chance that two unrelated examples agree (``ABOVE_CHANCE``): the same person,
not a coincidence of common names. A pair that qualifies is reported, not the triples around it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from typing import Any

import numpy as np

from pilot.checks.leaks.id_fields import one_to_one
from pilot.checks.leaks.model_views import ModelViews, example_digest, ordered_splits
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import TaskData

MAX_FIELDS = 10  # scalar fields combined (45 pairs, 120 triples)
AGREEMENT = 0.95  # a shared identity's later examples carry its earlier label this often ...
ABOVE_CHANCE = 0.3  # ... and this far above two unrelated examples agreeing
MIN_SHARED_EXAMPLES = 10  # later examples behind shared identities, to measure the agreement


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def composite_id_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    if views.skipped:
        return [], {}
    rows = [
        (split, example, example_digest({}, label))
        for split in views.order()
        for example, label in zip(views.splits[split], views.labels[split])
    ]
    fields = _candidate_fields(rows)
    warnings, report, found = [], {}, []
    for size in (2, 3):
        for names in combinations(fields, size):
            if any(set(pair) <= set(names) for pair in found):
                continue
            said = _shared_identity(rows, names, limits)
            if said is None:
                continue
            report["+".join(names)] = said["numbers"]
            if said["finding"] is not None:
                found.append(names)
                warnings.append(said["finding"])
    return warnings, report


def _candidate_fields(rows: list[tuple[str, Any, str]]) -> list[str]:
    """Scalar fields with two or more values that repeat, the label's own (one-to-one with it) left out."""
    names = sorted({name for _, e, _ in rows for name in e.fields})
    kept = []
    for name in names:
        values = [e.fields.get(name) for _, e, _ in rows]
        if not all(_scalar(v) for v in values) or not 2 <= len(set(values)) < len(values):
            continue  # one value, or one per example (no combination with it repeats)
        if one_to_one(list(zip(values, (label for _, _, label in rows)))):
            continue  # the raw label (an outcome's name)
        kept.append(name)
    return kept[:MAX_FIELDS]


def _shared_identity(rows: list[tuple[str, Any, str]], names: tuple[str, ...], limits: LeakThresholds):
    keys = [tuple(example.fields[n] for n in names) for _, example, _ in rows]
    distinct = set(keys)
    alone = max(len({k[i] for k in keys}) for i in range(len(names)))
    groups = defaultdict(set)
    for key, (_, example, _) in zip(keys, rows):
        groups[key].add(example.group)
    if len(distinct) < limits.id_min_distinct or len(distinct) <= alone or len(distinct) == len(keys):
        return None
    if all(len(g) == 1 for g in groups.values()) and len({next(iter(g)) for g in groups.values()}) == len(groups):
        return None  # one-to-one with the declared group: the group itself
    per_split: dict[str, dict[Any, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for key, (split, _, label) in zip(keys, rows):
        per_split[split][key][label] += 1
    order = [s for s in ordered_splits(per_split) if per_split[s]]
    if len(order) < 2:
        return None
    earlier = per_split[order[0]]
    shared_examples = agreeing = shared_values = later_values = 0
    for later in order[1:]:
        for key, labels in per_split[later].items():
            later_values += 1
            if key in earlier:
                shared_values += 1
                known = earlier[key].most_common(1)[0][0]
                shared_examples += sum(labels.values())
                agreeing += labels[known]
    chance = _chance(per_split, order)
    numbers = {
        "values": len(distinct),
        "shared_later_values": shared_values,
        "later_values": later_values,
        "label_agreement": round(agreeing / shared_examples, 4) if shared_examples else None,
        "chance_agreement": round(chance, 4),
    }
    enough = shared_values >= limits.id_min_shared and shared_values >= limits.id_min_shared_share * later_values
    agree = shared_examples >= MIN_SHARED_EXAMPLES and agreeing / shared_examples >= AGREEMENT
    if not (enough and agree and agreeing / shared_examples - chance >= ABOVE_CHANCE):
        return {"numbers": numbers, "finding": None}
    joined = " + ".join(f"'{n}'" for n in names)
    finding = Finding(
        f"fields {joined} together name one identity: {shared_values} of {later_values} values of the later "
        f"split(s) also in {order[0]}, and those examples carry {order[0]}'s label {agreeing / shared_examples:.0%} "
        f"of the time (two unrelated examples: {chance:.0%}); is it the group?",
        detail=f"{len(distinct)} distinct combinations, more than any of the fields alone ({alone}). If one "
        "combination's examples belong together (one person), group by it (Example.group) and split by group",
    )
    return {"numbers": numbers, "finding": finding}


def _chance(per_split: dict[str, dict[Any, Counter]], order: list[str]) -> float:
    """How often an example of a later split carries a label drawn from the first split's labels."""
    first = Counter()
    for labels in per_split[order[0]].values():
        first.update(labels)
    later = Counter()
    for split in order[1:]:
        for labels in per_split[split].values():
            later.update(labels)
    total_first, total_later = sum(first.values()), sum(later.values())
    if not total_first or not total_later:
        return 0.0
    return sum(first[c] / total_first * later[c] / total_later for c in later)
