"""metrics.jsonl: the rows (kind, update, loss) and the summary the recap reads (``read_metrics``); a fast
path for files as pilot writes them, json line by line for the rest."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pilot.recap.damage import NUMBER, Unreadable, is_count, is_number, json_kind, json_problem, read_text, wrong_value
from pilot.run_record import METRICS_LEADING_KEYS

# A line as pilot writes it starts with run_record.METRICS_LEADING_KEYS, in that order
# (run_record.metrics_line); loss is a JSON number or what json writes for nan/inf.
JSON_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity"
_LEADING_PATTERNS = {"kind": r'"(train|val)"', "update": r"(0|[1-9]\d*)", "loss": "(" + JSON_NUMBER + ")"}
ROW_START = re.compile(
    r"\n\{" + ", ".join(f'"{key}": {_LEADING_PATTERNS[key]}' for key in METRICS_LEADING_KEYS) + r"[,}]"
)
LAST_LINE_KEYS = {
    "train": (("examples_seen", ("an integer >= 0", is_count)), ("targets_seen", ("an integer >= 0", is_count))),
    "val": (("accuracy", NUMBER),),
}  # read from the last line of each kind only


def _rows_as_written(text: str) -> list[tuple[str, str, str]] | None:
    """(kind, update, loss) of every line, as text, when every line is as pilot writes it; else None.

    One regex over the file: each line starts with a well-formed kind/update/loss, closes
    with ``}``, and holds one record. Cheap enough for 10,000 runs (bench/recap_10k.py);
    what it does not check is the text between the loss and the closing brace of a line
    other than the last of each kind, which the recap does not read."""
    body = text if text.endswith("\n") else text + "\n"
    lines = body.count("\n")
    if body.count("}\n") != lines or body.count('{"kind": "') != lines:
        return None
    rows = ROW_START.findall("\n" + body)
    return rows if len(rows) == lines else None


def metrics_line(line: str) -> tuple[str, int, Any, dict[str, Any]]:
    """kind, update, loss and the whole object of one metrics.jsonl line; Unreadable says what is wrong."""
    try:
        row = json.loads(line)
    except ValueError as error:
        raise Unreadable(json_problem(error)) from None
    except RecursionError:
        raise Unreadable("not JSON (nested too deep)") from None
    if not isinstance(row, dict):
        raise Unreadable(f"{json_kind(row)}, not an object")
    kind, update, loss = row.get("kind"), row.get("update"), row.get("loss")
    if kind not in ("train", "val"):
        raise Unreadable(wrong_value(row, "kind", "'train' or 'val'"))
    if not is_count(update):
        raise Unreadable(wrong_value(row, "update", "an integer >= 0"))
    if not (is_number(loss) or (loss is None and kind == "val" and "loss" in row)):  # val: null = nothing scored
        raise Unreadable(wrong_value(row, "loss", "a number"))
    return kind, update, loss, row


def _check_last_line(row: dict[str, Any], kind: str) -> None:
    for key, (expected, check) in LAST_LINE_KEYS[kind]:
        if row.get(key) is not None and not check(row[key]):
            raise Unreadable(wrong_value(row, key, expected))


def _rows_line_by_line(text: str, name: str) -> tuple[list, dict[str, dict[str, Any]]]:
    """Every line through json: the rows and the last line of each kind; Unreadable names the first bad line."""
    rows, last, problems = [], {}, []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            kind, update, loss, row = metrics_line(line)
        except Unreadable as problem:
            problems.append(f"{name} line {number}: {problem}")
            continue
        rows.append((kind, update, loss))
        last[kind] = (number, row)
    if problems:
        more = f" (and {len(problems) - 1} more damaged line(s))" if len(problems) > 1 else ""
        raise Unreadable(problems[0] + more)
    for kind, (number, row) in last.items():
        try:
            _check_last_line(row, kind)
        except Unreadable as problem:
            raise Unreadable(f"{name} line {number}: {problem}") from None
    return rows, {kind: row for kind, (_, row) in last.items()}


def _last_of_kind(text: str, kind: str, name: str) -> dict[str, Any]:
    """The last line of ``kind`` in a file whose every line is as pilot writes it, parsed and checked."""
    start = ("\n" + text).rfind('\n{"kind": "' + kind + '"')
    if start < 0:
        return {}
    end = text.find("\n", start)
    try:
        row = metrics_line(text[start:] if end < 0 else text[start:end])[3]
        _check_last_line(row, kind)
    except Unreadable as problem:
        raise Unreadable(f"{name} line {text.count(chr(10), 0, start) + 1}: {problem}") from None
    return row


def read_metrics(path: Path) -> dict[str, Any]:
    """Summary of metrics.jsonl plus the rows (kind, update, loss) and validation points for the picture.

    Fast path: ``_rows_as_written``; a file it does not account for goes through json line
    by line, where any damaged line makes the run unreadable: no silent gaps."""
    text = read_text(path)
    rows = _rows_as_written(text) if text.strip() else []
    if rows is None:
        rows, last = _rows_line_by_line(text, path.name)
    else:
        last = {kind: _last_of_kind(text, kind, path.name) for kind in ("train", "val")}
    # rows stay as read (text on the fast path) until the picture needs them: most of 10,000 runs are never drawn
    val = [(int(u), float(loss)) for k, u, loss in rows if k == "val" and loss is not None]
    finite = [loss for _, loss in val if math.isfinite(loss)]
    last_train, last_val = last.get("train", {}), last.get("val", {})
    return {
        "updates_done": last_train.get("update", 0),
        "examples_seen": last_train.get("examples_seen", 0),
        "targets_seen": last_train.get("targets_seen", 0),
        "final_train_loss": last_train.get("loss"),
        "final_val_loss": val[-1][1] if val else None,
        "best_val_loss": min(finite) if finite else None,
        "final_val_accuracy": last_val.get("accuracy"),
        "val_points": len(val),
        "_rows": rows,
        "_val_curve": val,
    }
