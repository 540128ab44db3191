"""A category coded per split (``category_code_warnings``): an integer input that is a fixed function of a
string field of the examples within each split, but another function in a later split (``pd.factorize`` or a
vocabulary of categories fitted on each split's own data frame, first-seen order): the same plan is 3 in
training and 0 in validation, and the model reads another category's embedding for every validation row.
Found per integer input column (at most ``MAX_COLUMNS`` per key) and string field: one code per value in
each split (``FUNCTION`` of its examples), at least ``MIN_VALUES`` values shared, and at least
``MIN_MOVED`` of them (and ``MOVED_SHARE``) coded otherwise in the later split. The same for a one-hot
coding (``one_hot_warnings``): the 0/1 input column that marks each value of a string field (1 for
``FUNCTION`` of its examples, for at most 5% of the others) is another column in a later split
(``pd.get_dummies`` on each split's own frame, a split without one category padded at the end)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.result import Finding

MAX_COLUMNS = 64
MAX_ONE_HOT = 1024  # columns of an input read for 0/1 indicators
MIN_VALUES, MIN_MOVED, MOVED_SHARE = 3, 2, 0.5
FUNCTION = 0.95  # of a value's examples carry its most common code


def _columns(views: ModelViews, split: str) -> dict[tuple[str, int], np.ndarray]:
    """(key, column) -> that integer column over the split's examples (inputs of one shape per key)."""
    rows = views.inputs[split]
    found: dict[tuple[str, int], np.ndarray] = {}
    for key in rows[0] if rows else []:
        values = [row.get(key) for row in rows]
        if any(v is None or not np.issubdtype(np.asarray(v).dtype, np.integer) for v in values):
            continue
        flat = [np.asarray(v).reshape(-1) for v in values]
        if len({len(f) for f in flat}) != 1 or len(flat[0]) > MAX_COLUMNS:
            continue
        table = np.stack(flat)
        found.update({(key, column): table[:, column] for column in range(table.shape[1])})
    return found


def _coding(values: list[Any], codes: np.ndarray) -> dict[Any, int] | None:
    """value -> its code when the codes are (nearly) a function of the values, each seen twice; else None."""
    seen: dict[Any, Counter] = defaultdict(Counter)
    for value, code in zip(values, codes.tolist()):
        seen[value][code] += 1
    coding = {}
    for value, counts in seen.items():
        code, count = counts.most_common(1)[0]
        if sum(counts.values()) >= 2 and count < FUNCTION * sum(counts.values()):
            return None
        coding[value] = code
    return coding if len(coding) >= MIN_VALUES else None


def _string_fields(views: ModelViews, split: str) -> dict[str, list[str]]:
    examples = views.splits[split]
    names = examples[0].fields if examples else {}
    return {
        name: [e.fields.get(name) for e in examples]
        for name in names
        if all(isinstance(e.fields.get(name), str) for e in examples)
    }


def _indicators(views: ModelViews, split: str, fields: dict[str, list[str]]) -> dict[tuple[str, str], dict]:
    """(input key, string field) -> {value: the 0/1 column marking it}, where every value seen twice has one."""
    rows = views.inputs[split]
    found: dict[tuple[str, str], dict] = {}
    for key in rows[0] if rows else []:
        flat = [np.asarray(row.get(key)).reshape(-1) for row in rows]
        if len({f.size for f in flat}) != 1 or not 2 <= flat[0].size <= MAX_ONE_HOT or flat[0].dtype == object:
            continue
        table = np.stack(flat).astype(np.float64)
        binary = np.flatnonzero(((table == 0) | (table == 1)).all(axis=0) & (table.max(axis=0) == 1))
        if binary.size < MIN_VALUES:
            continue
        ones = table[:, binary]
        for name, values in fields.items():
            coding = _marks(values, ones, binary)
            if coding is not None:
                found[(key, name)] = coding
    return found


def _marks(values: list[str], ones: np.ndarray, columns: np.ndarray) -> dict[str, int] | None:
    """value -> the column (of ``columns``) that is 1 for its examples and 0 for the others', or None."""
    kinds, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    if not MIN_VALUES <= len(kinds) <= len(columns):
        return None
    member = np.zeros((len(values), len(kinds)))
    member[np.arange(len(values)), codes] = 1
    counts = member.sum(axis=0)
    hits = member.T @ ones  # value x column: how many of the value's examples have a 1 there
    outside = (ones.sum(axis=0)[None, :] - hits) / np.maximum(len(values) - counts[:, None], 1)
    marks = (hits >= FUNCTION * counts[:, None]) & (outside <= 1 - FUNCTION)
    coding = {}
    for k, kind in enumerate(kinds):
        if counts[k] < 2:
            continue
        if np.count_nonzero(marks[k]) != 1:
            return None
        coding[str(kind)] = int(columns[np.argmax(marks[k])])
    return coding if len(coding) >= MIN_VALUES else None


def one_hot_warnings(views: ModelViews, order: list[str], fields: dict[str, dict[str, list[str]]]) -> list[Finding]:
    train = _indicators(views, "train", fields["train"])
    warnings = []
    for split in order[1:]:
        if not train:
            break
        later = _indicators(views, split, {name: fields[split].get(name, []) for _, name in train})
        kept: set[tuple[str, int]] = set()  # columns a field marks alike in both splits: coded once, by that field
        moves = {}
        for (key, name), coding in train.items():
            other = later.get((key, name), {})
            shared = sorted(set(coding) & set(other))
            moved = [v for v in shared if coding[v] != other[v]]
            if len(shared) >= MIN_VALUES and not moved:
                kept.update((key, coding[v]) for v in shared)
            if len(shared) >= MIN_VALUES and len(moved) >= max(MIN_MOVED, MOVED_SHARE * len(shared)):
                moves[(key, name)] = (coding, other, moved, shared)
        for (key, name), (coding, other, moved, shared) in moves.items():
            if not {(key, coding[v]) for v in moved} <= kept:  # else another field explains the columns (a crew
                # paired with a shift until a rota changed): that field's coding did not move
                warnings.append(_finding(key, None, name, split, coding, other, moved, shared, one_hot=True))
    return warnings


def category_code_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    order = views.order()
    if "train" not in order or len(order) < 2:
        return [], {}
    fields = {split: _string_fields(views, split) for split in order}  # each read once: a wide table has many
    columns = {split: _columns(views, split) for split in order}
    warnings, report = [], {"compared": 0}
    for (key, column), codes in columns["train"].items():
        for name, values in fields["train"].items():
            train = _coding(values, codes)
            if train is None:
                continue
            for split in order[1:]:
                later_codes = columns[split].get((key, column))
                later = _coding(fields[split].get(name, []), later_codes) if later_codes is not None else None
                if later is None:
                    continue
                report["compared"] += 1
                shared = sorted(set(train) & set(later))
                moved = [v for v in shared if train[v] != later[v]]
                if len(shared) >= MIN_VALUES and len(moved) >= max(MIN_MOVED, MOVED_SHARE * len(shared)):
                    warnings.append(_finding(key, column, name, split, train, later, moved, shared))
    warnings += one_hot_warnings(views, order, fields)
    return warnings[:3], report


def _finding(key, column, name, split, train, later, moved, shared, one_hot=False) -> Finding:
    where = f"'{key}'" + (f"[{column}]" if column else "")
    first = moved[0]
    coded = (
        f"one-hot codes the field '{name}' per split: '{first}' is marked by column {train[first]} in train but "
        f"by column {later[first]} in {split}"
        if one_hot
        else f"codes the field '{name}' per split: '{first}' is {train[first]} in train but {later[first]} in {split}"
    )
    return Finding(
        f"input {where} {coded} ({len(moved)} of the {len(shared)} values both hold are coded otherwise)",
        split,
        detail="each split's codes were fitted on its own rows (pd.factorize, pd.get_dummies or a category vocabulary "
        "per data frame): "
        f"every {split} row of those values reads another category's {'column' if one_hot else 'embedding'}. Fix: fit the coding on the training split once "
        "and apply that mapping to every split",
    )
