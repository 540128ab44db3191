"""Duplicates behind ids (``duplicate_findings``): copies of what the model sees or of the normalised text in
two splits (``fail``), near-duplicate vectors or texts (``warn``)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

from pilot.checks.leaks.model_views import (
    ModelViews,
    changes_the_batch,
    example_digest,
    ordered_splits,
    untouched_by,
    vector_key,
)
from pilot.checks.leaks.texts import normalise_text, text_fields, text_near_duplicates
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.leaks.vectors import vector_near_duplicates
from pilot.checks.result import Finding
from pilot.data.task import TaskData


def duplicate_findings(
    task: TaskData, views: ModelViews, raw_hash, limits: LeakThresholds, skipped: list[str] | None = None
) -> tuple[list[Finding], list[Finding], dict[str, Any]]:
    """(fails, warnings, per pair of splits: counts and examples); a search too large for the
    declared limits is left out and said so in ``skipped``."""
    skipped = skipped if skipped is not None else []
    fails, warnings = [], []
    report: dict[str, Any] = {}
    order = views.order() if not views.skipped else [s for s in ordered_splits(task.splits) if task.splits[s]]
    raw_keys = {s: [raw_hash(e) for e in task.splits[s]] for s in order}
    pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
    reported = set()  # (split, index) of examples already reported as copies: never counted twice
    for a, b in pairs:  # raw-identical copies: the split audit's own finding
        earlier = set(raw_keys[a])
        reported.update((b, e.index) for e, raw in zip(task.splits[b], raw_keys[b]) if raw in earlier)

    def note(pair, kind, count, listed):
        report.setdefault(f"{pair[0]}/{pair[1]}", {})[kind] = {"count": count, "examples": listed}

    if not views.skipped:  # exact: what the model sees, with its label
        fails += _same_model_input(views, order, pairs, reported, limits, note, text_fields(task))
    fields = text_fields(task)
    if fields:  # normalised text
        fails += _same_normalised_text(
            task, fields, order, pairs, reported, limits, note, _seen_beside(views, fields, task)
        )

    if views.skipped:
        return fails, warnings, report
    vector = vector_key(views)
    if vector is not None:
        warnings += vector_near_duplicates(views, vector, pairs, reported, limits, note, skipped)
    elif fields:
        warnings += text_near_duplicates(task, views, fields, pairs, reported, limits, note, skipped)
    return fails, warnings, report


def _same_model_input(
    views: ModelViews, order, pairs, reported: set, limits: LeakThresholds, note, texts: list[str]
) -> list[Finding]:
    """Examples of a later split identical to an earlier one in what the model sees (inputs and label);
    where the first pair's texts (``texts``: the task's text fields) differ, encode lost what tells them apart."""
    fails = []
    digests = {s: [example_digest(x, y) for x, y in zip(views.inputs[s], views.labels[s])] for s in order}
    for a, b in pairs:
        first = {}
        for example, digest in zip(views.splits[a], digests[a]):
            first.setdefault(digest, (example.index,))
        hits = []
        for example, digest in zip(views.splits[b], digests[b]):
            if digest in first and (b, example.index) not in reported:  # raw copies: reported already
                hits.append((first[digest][0], example.index))
        listed = [f"{a} example {i} = {b} example {j}" for i, j in hits[: limits.listed]]
        note((a, b), "same_model_input_and_label", len(hits), listed)
        if hits:
            reported.update((b, j) for _, j in hits)
            lost = _texts_lost(views, (a, hits[0][0]), (b, hits[0][1]), texts)
            said = f"{len(hits)} {b} example(s) identical to a {a} example in what the model sees (inputs and label)"
            fails.append(
                Finding(
                    f"{said} behind different raw fields: {'; '.join(listed)}{lost}",
                    detail=""
                    if lost
                    else "ids or other fields the model never reads differ; drop the copies or group them",
                )
            )
    return fails


def _texts_lost(views: ModelViews, first: tuple[str, int], second: tuple[str, int], texts: list[str]) -> str:
    """Where two examples the model sees alike differ in a text field: encode loses what tells them apart."""
    found = [next((e for e in views.splits[s] if e.index == i), None) for s, i in (first, second)]
    if None in found:
        return ""
    one, other = found
    differ = [f for f in texts if str(one.fields.get(f)) != str(other.fields.get(f))]
    if not differ:
        return ""
    field = differ[0]
    return (
        f". Their '{field}' fields differ ({str(one.fields[field])[:60]!r} vs {str(other.fields[field])[:60]!r}), yet encode "
        "gives the same inputs: it loses what tells the texts apart (words mapped to one unknown id — a "
        "vocabulary built lower-cased and looked up as written? — or texts cut before they differ). Fix: encode "
        "so that different texts give different inputs; copies that remain are copies"
    )


def _seen_beside(views: ModelViews, texts: list[str], task: TaskData) -> dict[int, str]:
    """Example index -> a digest of what the model sees that its texts do not set (a row of numbers beside a
    merchant's name, precomputed before encode); {} where nothing is left beside the texts."""
    kept = untouched_by(task, views, texts)
    kept = {k: mask for k, mask in kept.items() if mask.any()}
    if not kept:
        return {}
    return {
        e.index: hashlib.sha1(
            b"".join(np.ascontiguousarray(row[k][m]).tobytes() for k, m in sorted(kept.items()))
        ).hexdigest()[:16]
        for s in views.order()
        for e, row in zip(views.splits[s], views.inputs[s])
    }


def _same_normalised_text(
    task: TaskData, fields: list[str], order, pairs, reported: set, limits: LeakThresholds, note, beside: dict
) -> list[Finding]:
    """Examples of a later split with the same text as an earlier one after normalising, then (two text
    fields or more) with the same texts in another field order: a question pair swapped is the same pair.
    Examples that also hold arrays (an image's pixels or features beside its caption or question) are the
    same only with the same arrays: one templated question about two images is two examples; and so with the
    same values of every other field the model reads (a merchant's name on two purchases of other amounts is
    two examples; an id it never reads is no difference)."""
    fails = []
    keyings = [("", lambda texts: texts)]
    numbers = _fields_read(task, fields, order)
    if len(fields) > 1:
        keyings.append((" in another order of the fields", sorted))
    for said, arranged in keyings:
        keys = {
            s: [
                " \x1f ".join(arranged([normalise_text(e.fields[f]) for f in fields]))
                + _arrays_key(e, fields, numbers)
                + beside.get(e.index, "")
                for e in task.splits[s]
            ]
            for s in order
        }
        for a, b in pairs:
            first = {}
            for example, key in zip(task.splits[a], keys[a]):
                first.setdefault(key, example.index)
            hits = [
                (first[k], e.index)
                for e, k in zip(task.splits[b], keys[b])
                if k in first and (b, e.index) not in reported
            ]
            listed = [f"{a} example {i} = {b} example {j}" for i, j in hits[: limits.listed]]
            note((a, b), "same_text_normalised" + ("_reordered" if said else ""), len(hits), listed)
            if hits:
                reported.update((b, j) for _, j in hits)
                fails.append(
                    Finding(
                        f"{len(hits)} {b} example(s) with the same text as a {a} example{said} after normalising "
                        f"case, punctuation and whitespace (fields {fields}): {'; '.join(listed)}"
                    )
                )
    return fails


def _perturbed(value: Any) -> Any:
    """Another value of the same form (numbers moved, strings lengthened, nested alike), None where there is none."""
    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, (int, float, np.number)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + " x"
    if torch.is_tensor(value) or isinstance(value, np.ndarray):
        return value * 2 + 1 if value.dtype != bool else ~value
    if isinstance(value, dict):
        return {k: (_perturbed(v) if _perturbed(v) is not None else v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value:
        moved = [_perturbed(v) for v in value]
        return type(value)(m if m is not None else v for m, v in zip(moved, value))
    return None


def _fields_read(task: TaskData, texts: list[str], order: list[str]) -> list[str]:
    """The fields beside the texts that reach the model (another value encodes to other tensors: an amount, an
    hour, a dict of numbers), not ids it never reads: the same text beside other values of them is another
    example (a merchant's name on two purchases)."""
    example = next((e for s in order for e in task.splits[s]), None)
    if example is None or task.encode is None or task.collate is None:
        return []
    label = task.raw_label(example) if task.raw_label is not None else None
    read = []
    for name, value in example.fields.items():  # the label is no input: a copy relabelled is still a copy
        is_label = label is not None and isinstance(value, (str, int)) and value == label
        other = _perturbed(value) if name not in texts and not is_label else None
        if other is not None and changes_the_batch(task, example, name, other):
            read.append(name)
    return read


def _arrays_key(example, texts: list[str], numbers: list[str] = ()) -> str:
    """A digest of the example's array fields (NumPy arrays, tensors, lists of numbers) and of the other
    fields the model reads (``numbers``: scalars, dicts), "" where it has none."""
    parts = [f"{name}={_digest(example.fields.get(name))}" for name in numbers]
    for name in sorted(set(example.fields) - set(texts)):
        value = example.fields[name]
        if torch.is_tensor(value):
            value = value.detach().cpu().numpy()
        if isinstance(value, (list, tuple)) and len(value) > 1 and all(isinstance(v, (int, float)) for v in value):
            value = np.asarray(value)
        if isinstance(value, np.ndarray) and value.size > 1:
            parts.append(f"{name}:{hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]}")
    return (" \x1e " + " ".join(parts)) if parts else ""


def _digest(value: Any) -> str:
    """A short text of a field's value: arrays and tensors by their bytes, the rest by their repr."""
    if torch.is_tensor(value):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
    return repr(value)[:200]
