"""Step 2: audit the split: no group in two splits, no identical example in two splits.

Identity of an example is a hash of its raw content (every field, arrays by
their bytes), so a copy that arrived under another group or index is caught.
For a time split, train must end strictly before validation starts, and
validation before test.

Then the leaks the task did not declare (``pilot.checks.leaks``, thresholds in
``LeakThresholds``): id-like fields shared across splits (warn), copies behind
ids — the same model input and label, or the same text after normalisation —
(fail), near-duplicate vectors or texts (warn), time-stamped data split other
than by time (warn), a single feature or token that gives the label away (warn), a later split's
inputs drawn from another token distribution than train's, or features on another scale (warn).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from typing import Any

import numpy as np

from pilot.checks import leaks
from pilot.checks.leaks import LeakThresholds
from pilot.checks.result import CheckResult, Finding, summarise
from pilot.data.task import TaskData

STEP = "split_audit"


def _canonical(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.str, "shape": value.shape, "sha1": hashlib.sha1(value.tobytes()).hexdigest()}
    if hasattr(value, "detach"):  # a tensor
        return _canonical(value.detach().cpu().numpy())
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def content_hash(fields: dict[str, Any]) -> str:
    blob = json.dumps(_canonical(fields), sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()


def _overlapping(index_splits: dict[Any, list[str]]) -> list[Finding]:
    """The same example (its index) placed in more than one split: the splits overlap."""
    twice = {index: splits for index, splits in index_splits.items() if len(splits) > 1}
    if not twice:
        return []
    first, where = next(iter(twice.items()))
    return [
        Finding(
            f"the splits overlap: {len(twice)} example(s) are in more than one split, the same example (its "
            f"index) each time, e.g. example {first} in {where}. Slices cut by hand that share rows? Fix: put "
            "each example in exactly one split"
        )
    ]


def _identical_by_chance(task: TaskData, digests: dict[int, str], identical: int) -> str:
    """Why identical examples in two splits are what chance gives (a warning, not a copy found), or '': train
    itself holds the same content under different groups at least as often as the later splits find theirs
    in train (answer sheets of a 1-5 scale, a few binary features: the inputs take few distinct values).
    Copies of one record across splits are far above that rate."""
    train = task.splits.get("train") or []
    if not identical or len(train) < 20:
        return ""
    groups_of: dict[str, set] = defaultdict(set)
    for example in train:
        groups_of[digests[id(example)]].add(example.group)
    repeated = sum(len(groups_of[digests[id(e)]]) > 1 for e in train) / len(train)  # under another group too
    later = [e for split, examples in task.splits.items() if split != "train" for e in examples]
    found = sum(digests[id(e)] in groups_of for e in later) / max(1, len(later))
    if repeated < 0.01 or found > 1.5 * repeated or _continuous(train, len(groups_of)):
        return ""
    distinct = len(groups_of)
    return (
        f"{found:.1%} of the other splits' examples are in train, while train itself holds {repeated:.1%} of its "
        f"examples under another group too ({distinct} distinct among {len(train)}): the inputs take few distinct "
        "values, so different groups give identical examples by chance. If they are copies of one record instead, "
        "remove the duplicates before splitting"
    )


def _continuous(train: list, distinct: int) -> bool:
    """A field of floats whose values differ wherever the examples do (12 measurements per record): identical
    examples there are copies of one record (oversampled, duplicated before the split), never chance."""
    for name in train[0].fields:
        values = [e.fields.get(name) for e in train]
        if not all(isinstance(v, (float, np.floating, np.ndarray)) for v in values):
            continue
        floats = all(np.asarray(v).dtype.kind == "f" for v in values)
        if floats and len({np.asarray(v).tobytes() for v in values}) >= 0.9 * distinct:
            return True
    return False


def _groups_said(straddling: list[str]) -> str:
    if not straddling:
        return "no shared group"
    return f"{len(straddling)} group(s) in several splits (by time: a group's past trains, its future validates)"


def _time_order(task: TaskData) -> list[Finding]:
    """A split by time: every split ends before the next starts; examples without a time are said."""
    untimed = sum(e.time is None for ex in task.splits.values() for e in ex)
    if untimed:
        return [
            Finding(
                f"data.split.by=time, but {untimed} example(s) have no time (Example.time is None): the splits cannot "
                "be checked as a split by time. Fix: give every Example its time, or data.split.by=group"
            )
        ]
    findings = []
    bounds = {s: [e.time for e in ex] for s, ex in task.splits.items() if ex}
    order = [s for s in ("train", "val", "test") if s in bounds]
    for earlier, later in zip(order, order[1:]):
        if max(bounds[earlier]) >= min(bounds[later]):
            findings.append(
                Finding(
                    f"{earlier} ends at time {max(bounds[earlier])}, not before {later} starts at {min(bounds[later])}"
                )
            )
    return findings


AS_MADE = "its splits audited as they are"


def _as_made(task: TaskData) -> str:
    """How splits a task's ``make_task`` reads as they are (from separate files, no ``data.split``) were
    made: by time where every example has a time and each split ends before the next starts, else by group."""
    timed = all(e.time is not None for examples in task.splits.values() for e in examples)
    return "time" if timed and not _time_order(task) else "group"


def audit_split(
    task: TaskData, split_by: str | None = "group", thresholds: LeakThresholds | None = None
) -> CheckResult:
    """``split_by``: ``data.split.by``; None where the task's config has no ``data.split`` (``_as_made``)."""
    started = time.perf_counter()
    undeclared_split, split_by = split_by is None, split_by or _as_made(task)
    limits = thresholds or LeakThresholds()
    findings: list[Finding] = []
    group_splits: dict[str, set] = defaultdict(set)
    content_splits: dict[str, dict[str, int]] = defaultdict(dict)
    raw_hashes: dict[int, str] = {}
    counts = {}
    index_splits: dict[Any, list[str]] = defaultdict(list)  # the same example (its index) placed twice
    for split, examples in task.splits.items():
        groups = set()
        for example in examples:
            index_splits[example.index].append(split)
            group_splits[example.group].add(split)
            groups.add(example.group)
            raw_hashes[id(example)] = digest = content_hash(example.fields)
            content_splits[digest].setdefault(split, example.index)
        counts[split] = {"examples": len(examples), "groups": len(groups)}
    findings += _overlapping(index_splits)
    straddling = sorted(group for group, splits in group_splits.items() if len(splits) > 1)
    leaking = straddling if split_by != "time" else ()  # by time, a group's past trains, its future validates
    leak = "its examples leak between splits"
    findings += [Finding(f"group '{g}' appears in {sorted(group_splits[g])}", detail=leak) for g in leaking]
    identical = [
        ", ".join(f"{s} example {i}" for s, i in sorted(w.items())) for w in content_splits.values() if len(w) > 1
    ]
    chance = _identical_by_chance(task, raw_hashes, len(identical))
    if chance:  # a warning: what chance gives inputs of few distinct values
        chance_warnings = [
            Finding(f"{len(identical)} identical example(s) in two splits (e.g. {identical[0]}): {chance}")
        ]
    else:
        chance_warnings, findings = [], findings + [Finding(f"identical example in two splits: {p}") for p in identical]
    if split_by == "time":
        findings += _time_order(task)
    declared_seconds = time.perf_counter() - started
    warnings, undeclared = _undeclared_leaks(task, split_by, limits, findings, lambda example: raw_hashes[id(example)])
    warnings[:0] = chance_warnings
    summary = ", ".join(f"{s} {c['examples']} examples / {c['groups']} groups" for s, c in counts.items())
    skipped = undeclared["skipped"]
    said = f"split by {split_by}" + (f" (data.split is not in the task's config: {AS_MADE})" * undeclared_split)
    ok = f"{said}, {_groups_said(straddling)} or identical example, no undeclared leak found: {summary}" + (
        f" (not searched: {'; '.join(skipped)})" if skipped else ""
    )
    details = {
        "per_split": counts,
        "split_by": split_by,
        "split_declared": not undeclared_split,
        "groups_in_several_splits": len(straddling),  # by time: by design, not judged
        "undeclared": undeclared,
        "seconds": {"declared": round(declared_seconds, 4), "total": round(time.perf_counter() - started, 4)},
    }
    return summarise(STEP, findings, ok, details, warnings)


def _judged(detector, *args) -> tuple[list[Finding], dict[str, Any]]:
    """A detector's warnings, or, where the task's data is of a shape it does not expect, none (the
    error in its report): a detector never takes the split audit down."""
    try:
        return detector(*args)
    except Exception as error:  # noqa: BLE001 - said in the report
        return [], {"skipped": f"{type(error).__name__}: {error}"[:300]}


def _made_by_the_task(
    task: TaskData, views, limits: LeakThresholds, split_by: str
) -> tuple[list[Finding], dict[str, Any]]:
    """The detectors of what the task's own code does to inputs and labels (a scale applied twice, a
    training-only augmentation that breaks the label, codes out of order, targets in two units): the
    class-scale warnings, and each detector's report with the other warnings under "warnings"."""
    scale_warnings, report = _judged(leaks.class_scale_warnings, views, limits, task.class_names)
    made: dict[str, Any] = {"class_scale": report, "warnings": []}
    for name, detector, args in (
        ("train_transform", leaks.train_transform_warnings, (views, task.class_names)),
        ("ordinal_codes", leaks.ordinal_code_warnings, (views,)),
        ("target_units", leaks.target_unit_warnings, (views,)),
        ("train_augment", leaks.train_augment_warnings, (views,)),
        ("own_statistics", leaks.own_statistics_warnings, (views,)),
        ("clipped_targets", leaks.clipped_target_warnings, (views,)),
        ("category_codes", leaks.category_code_warnings, (views,)),
        ("decoded_text", leaks.decoded_text_warnings, (task, views)),
        ("one_split_values", leaks.one_split_value_warnings, (task, views, split_by)),
        ("channel_order", leaks.channel_order_warnings, (views,)),
        ("partial_copies", leaks.partial_copy_warnings, (views,)),
        ("transformed_copies", leaks.transformed_copy_warnings, (views,)),
        ("class_fill", leaks.class_fill_warnings, (task, views)),
        ("label_encoding", leaks.label_encoding_warnings, (views,)),
        ("window_target", leaks.window_target_warnings, (views,)),
    ):
        warnings, made[name] = _judged(detector, *args)
        made["warnings"] += warnings
    return scale_warnings, made


def _undeclared_leaks(
    task: TaskData, split_by: str, limits: LeakThresholds, findings: list[Finding], raw_hash
) -> tuple:
    """Run the detectors of ``pilot.checks.leaks``; fails go to ``findings``, warnings are returned."""
    views = leaks.model_views(task)
    skipped = [f"model inputs: {views.skipped}"] if views.skipped else []
    duplicate_fails, duplicate_warnings, duplicates = leaks.duplicate_findings(task, views, raw_hash, limits, skipped)
    findings.extend(duplicate_fails)
    constant_fails, constant_labels = leaks.constant_label_findings(views)
    findings.extend(constant_fails)
    id_warnings, id_fields = leaks.id_field_warnings(task, views, limits)
    composite_warnings, composite_ids = leaks.composite_id_warnings(task, views, limits)
    time_warnings, times = leaks.time_warnings(task, split_by, limits)
    leak_warnings, target = leaks.target_leak_warnings(task, views, limits)
    token_warnings, token_target = leaks.token_leak_warnings(task, views, limits)
    skew_warnings, skew = leaks.token_skew_warnings(task, views, limits)
    feature_warnings, feature_skew = leaks.feature_skew_warnings(task, views, limits, split_by)
    relation_warnings, label_relation = leaks.label_relation_warnings(views, split_by, task.class_names)
    pair_warnings, identical_pairs = leaks.identical_pair_warnings(views)
    order_warnings, segment_order = leaks.segment_order_warnings(views)
    window_warnings, shifted_windows = leaks.shifted_window_warnings(views)
    linear_warnings, linear = leaks.linear_leak_warnings(views)
    scale_warnings, made = _made_by_the_task(task, views, limits, split_by)
    # overlapping windows first: they explain a feature that then predicts the label (a random walk's last day)
    leak_warnings = window_warnings + linear_warnings + pair_warnings + leak_warnings
    leak_warnings += token_warnings + skew_warnings + feature_warnings + order_warnings + made.pop("warnings")
    leak_warnings += relation_warnings  # last: a cause named above (inputs on another scale) explains it
    if "skipped" in target:
        skipped.append(f"target leakage: {target['skipped']}")
    report = {
        "id_fields": id_fields,
        "composite_ids": composite_ids,
        "duplicates": duplicates,
        "time": times,
        "target_leakage": target,
        "token_leakage": token_target,
        "token_skew": skew,
        "feature_skew": feature_skew,
        "label_relation": label_relation,
        "identical_pairs": identical_pairs,
        "segment_order": segment_order,
        "shifted_windows": shifted_windows,
        "linear_target": linear,
        "constant_train_labels": constant_labels,
        **made,
        "model_view_dropped_keys": views.dropped_keys,
        "skipped": skipped,
        "thresholds": leaks.thresholds_dict(limits),
    }
    # one class on another scale first: it explains that class's examples then look alike (near-duplicates)
    first = scale_warnings + id_warnings + composite_warnings
    return first + duplicate_warnings + time_warnings + leak_warnings, report
