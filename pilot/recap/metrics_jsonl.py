"""metrics.jsonl: the rows (kind, update, loss) and the summary the recap reads (``read_metrics``); a fast
path for files as pilot writes them, json line by line for the rest."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pilot.recap.damage import NUMBER, Unreadable, is_count, is_number, json_kind, json_problem, read_text, wrong_value
from pilot.run_record import METRICS_LEADING_KEYS

# A line as pilot writes it starts with run_record.METRICS_LEADING_KEYS, in that order
# (run_record.metrics_line); loss is a JSON number or what json writes for nan/inf.
JSON_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity"
_FIELDS = {"kind": r'"(?:train|val)"', "update": r"(?:0|[1-9]\d*)", "loss": f"(?:{JSON_NUMBER})"}


def _leading(captured: tuple[str, ...], kind: str | None = None) -> str:
    """The start of a line as pilot writes it (``kind``: of that kind only), capturing ``captured``."""
    fields = {**_FIELDS, **({"kind": f'"{kind}"'} if kind else {})}
    return r"\{" + ", ".join(
        f'"{key}": ' + (f"({fields[key]})" if key in captured else fields[key]) for key in METRICS_LEADING_KEYS
    )


AS_WRITTEN = re.compile(f"(?:{_leading(())}" + r"(?:\}|,[^\n]*\})\n)*")  # whole lines, each closed by its brace
KIND_ROW = {
    kind: re.compile(_leading(("update", "loss"), kind) + "[,}]") for kind in ("train", "val")
}  # (update, loss) of a line of one kind (``match``)
VAL_ROWS = re.compile(r"\n" + KIND_ROW["val"].pattern)  # every validation line, after a newline: a literal
# prefix the regex engine searches for (a ^ anchor in MULTILINE mode made it 15x slower)
LAST_LINE_KEYS = {
    "train": (("examples_seen", ("an integer >= 0", is_count)), ("targets_seen", ("an integer >= 0", is_count))),
    "val": (("accuracy", NUMBER),),
}  # read from the last line of each kind only
CURVE_POINTS = 50  # training points per run the picture draws: one per ~10 pixels of a full-width curve


def _as_written(body: str) -> bool:
    """Every line of ``body`` (ending in a newline) is as pilot writes it: a well-formed kind, update
    and loss first, closed by ``}``, one record per line. One regex over the file, no row built:
    cheap enough for 10,000 runs (bench/recap_10k.py); what it does not check is the text between
    the loss and the closing brace of a line other than the last of each kind, which the recap
    does not read."""
    return AS_WRITTEN.fullmatch(body) is not None and body.count('{"kind": "') == body.count("\n")


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


TRAIN_START = '{"kind": "train", "update": '


def _split_train_line(line: str) -> tuple[str, str]:
    """(update, loss) text of a training line ``_as_written`` accepted (its format is checked: the
    loss ends at the first comma or the closing brace)."""
    update, _, rest = line[len(TRAIN_START) :].partition(', "loss": ')
    return update, rest.split(",", 1)[0].removesuffix("}")


def _train_curve(rows: list, unpack: Callable[[Any], tuple[Any, Any]] = tuple) -> list[tuple[float, float]]:
    """About CURVE_POINTS of a run's training rows, evenly spaced, its last one included, as
    (update, loss) by ``unpack``; non-finite and non-positive losses left out (the picture's log
    scale). Only the kept rows are unpacked: 50 of 200 lines, for each of 10,000 runs."""
    kept = rows[:: max(1, len(rows) // CURVE_POINTS)]
    if rows and kept[-1] is not rows[-1]:
        kept.append(rows[-1])
    points = [(float(u), float(loss)) for u, loss in map(unpack, kept)]
    return [(u, loss) for u, loss in points if math.isfinite(loss) and loss > 0]


def read_metrics(path: Path, curve: bool = False) -> dict[str, Any]:
    """Summary of metrics.jsonl and its validation points; with ``curve``, also the training points
    the picture draws (``_train_curve``).

    Fast path: ``_as_written``; a file it does not account for goes through json line by line,
    where any damaged line makes the run unreadable: no silent gaps."""
    text = read_text(path)
    body = text if text.endswith("\n") else text + "\n"
    if not text.strip():
        rows, last, fast = [], {}, False
    elif _as_written(body):
        rows, fast = None, True
        last = {kind: _last_of_kind(text, kind, path.name) for kind in ("train", "val")}
    else:
        (rows, last), fast = _rows_line_by_line(text, path.name), False
    if fast:
        val = [(int(u), float(loss)) for u, loss in VAL_ROWS.findall("\n" + body)]
    else:
        val = [(int(u), float(loss)) for k, u, loss in rows if k == "val" and loss is not None]
    finite = [loss for _, loss in val if math.isfinite(loss)]
    last_train, last_val = last.get("train", {}), last.get("val", {})
    summary = {
        "updates_done": last_train.get("update", 0),
        "examples_seen": last_train.get("examples_seen", 0),
        "targets_seen": last_train.get("targets_seen", 0),
        "final_train_loss": last_train.get("loss"),
        "final_val_loss": val[-1][1] if val else None,
        "best_val_loss": min(finite) if finite else None,
        "final_val_accuracy": last_val.get("accuracy"),
        "val_points": len(val),
        "_val_curve": val,
    }
    if curve:
        if fast:
            lines = [line for line in body.split("\n") if line.startswith(TRAIN_START)]
            summary["_train_curve"] = _train_curve(lines, _split_train_line)
        else:
            summary["_train_curve"] = _train_curve([(u, loss) for k, u, loss in rows if k == "train"])
    return summary
