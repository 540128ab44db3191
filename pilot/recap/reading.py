"""Reading run directories into recap rows: the recap's one reader of run.json and metrics.jsonl.

Every directory holding a run marker becomes exactly one row, never an exception.
Whatever the recap cannot read makes the row ``unreadable``; its ``stop_cause`` names
the file, the line and what was wrong ("metrics.jsonl line 7: loss is 'abc', not a
number"). Damage: a missing or empty file, a file that is not JSON, a run.json that is
not an object, a missing variant/seed/status, a value of the wrong type in any key the
recap reads (``RECORD_KEYS``), an unknown status, a time that is not a time, and a
metrics line that is not an object with kind train/val, an integer update and a
numeric loss. Harmless: keys the recap does not read, and non-finite losses (a diverged
run logs nan: a real value, not damage).

A row's sweep is its run.json ``sweep_id`` (one per multirun launch); a run without
one (a single run, or one written before sweep ids existed) belongs to its parent
directory's sweep.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from pilot.errors import PilotError

RUN_MARKERS = ("run.json", "metrics.jsonl", ".hydra")  # any of these makes a directory a run directory
NOT_WALKED = (".hydra", "checkpoints", "export", "resume_check")  # inside a run directory: never runs
NOT_RUNS = ("pilot", "estimate")  # run.json modes that hold no training run: left out of the recap
# every status pilot writes (pilot/train.py, pilot_run.py, estimate_run.py, engine/preemption.py)
STATUSES = ("running", "ok", "diverged", "oom", "failed", "preempted", "requeued", "interrupted")
# columns of every recap frame, even when no run could be read
COLUMNS = ("run_dir", "sweep", "sweep_id", "run_id", "parent_id", "variant", "seed", "status", "stop_cause")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # how run_record.py writes started_at / finished_at


class RecapRefused(PilotError, ValueError):
    """A path given to the recap does not exist or is not a directory; nothing was written."""


class Unreadable(Exception):
    """Why one run directory cannot be read: the file, the line and what was wrong."""


# --------------------------------------------------------------------------- what a value must be
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)  # Python >= 3.11 also reads run_record's "+0000"
    except ValueError:
        pass
    try:
        return datetime.strptime(value, TIME_FORMAT)
    except ValueError:
        return None


TEXT = ("a string", lambda v: isinstance(v, str))
INTEGER = ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63)
NUMBER = ("a number", _is_number)
OBJECT = ("an object", lambda v: isinstance(v, dict))
LIST = ("a list", lambda v: isinstance(v, list))
TEXTS = ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
STATUS = ("one of " + ", ".join(STATUSES), lambda v: isinstance(v, str) and v in STATUSES)
TIME = ("a time like 2026-11-30T01:00:00+0000", lambda v: isinstance(v, str) and _parse_time(v) is not None)

# run.json keys the recap reads: (key path, what the value must be, required). Absent or null
# is fine for the others; a nested key is checked when its parent is an object.
RECORD_KEYS: tuple[tuple[tuple[str, ...], tuple[str, Callable[[Any], bool]], bool], ...] = (
    (("variant",), TEXT, True),
    (("seed",), INTEGER, True),
    (("status",), STATUS, True),
    (("run_id",), TEXT, False),
    (("parent_id",), TEXT, False),
    (("sweep_id",), TEXT, False),
    (("mode",), TEXT, False),
    (("stop_cause",), TEXT, False),
    (("error",), TEXT, False),
    (("overrides",), TEXTS, False),
    (("started_at",), TIME, False),
    (("finished_at",), TIME, False),
    (("seconds_per_update",), NUMBER, False),
    (("peak_memory",), OBJECT, False),
    (("peak_memory", "rss_peak_bytes"), NUMBER, False),
    (("peak_memory", "cuda_peak_allocated_bytes"), NUMBER, False),
    (("memory_estimate",), OBJECT, False),
    (("memory_estimate", "peak_bytes"), NUMBER, False),
    (("task",), OBJECT, False),
    (("task", "targets_truncated_share"), NUMBER, False),
    (("task", "examples_truncated_share"), NUMBER, False),
    (("task", "tokens_truncated_share"), NUMBER, False),
    (("closing",), OBJECT, False),
    (("closing", "verdict"), TEXT, False),
    (("resumes",), LIST, False),
)
IDENTITY = ("run_id", "parent_id", "sweep_id", "variant", "seed", "mode")  # kept on an unreadable row when valid


def _shown(value: Any) -> str:
    """A value as the reason quotes it: strings in quotes, the rest as JSON, cut at 40 characters."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _what(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "a number")


def _wrong(holder: dict[str, Any], key: str, expected: str, name: str | None = None) -> str:
    name = name or key
    if key not in holder:
        return f"no {name}"
    return f"{name} is {_shown(holder[key])}, not {expected}"


# --------------------------------------------------------------------------- files and directories
def check_paths(paths: Iterable[Path]) -> list[Path]:
    """The paths, each an existing directory; otherwise one RecapRefused naming every bad one."""
    paths = [Path(p) for p in paths]
    problems = [f"{p} does not exist" if not p.exists() else f"{p} is not a directory" for p in paths if not p.is_dir()]
    if problems:
        raise RecapRefused(
            "; ".join(problems) + ". Fix: give run or sweep directories, e.g. "
            "python -m pilot.recap sweeps/<date>/<time>-<suffix>"
        )
    return paths


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every directory under ``paths`` that is (or was meant to be) a run directory."""
    found = set()
    for root in check_paths(paths):
        for current, dirs, files in os.walk(root):
            names = set(files) | set(dirs)
            if any(marker in names for marker in RUN_MARKERS):
                found.add(Path(current))
                dirs[:] = [d for d in dirs if d not in NOT_WALKED]
    return sorted(found)


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise Unreadable(f"{path.name}: missing") from None
    except UnicodeDecodeError as error:
        raise Unreadable(f"{path.name}: not text (byte {error.start} is not UTF-8)") from None
    except OSError as error:
        raise Unreadable(f"{path.name}: cannot be read ({error.strerror or error})") from None


def _json_problem(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg} at column {error.colno})"
    return f"not JSON ({error})"


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold one object (run.json)."""
    text = _read_text(path)
    if not text.strip():
        raise Unreadable(f"{path.name}: empty file")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(f"{path.name} line {error.lineno}: {_json_problem(error)}") from None
    except (ValueError, RecursionError) as error:
        raise Unreadable(f"{path.name}: not JSON ({type(error).__name__})") from None
    if not isinstance(value, dict):
        raise Unreadable(f"{path.name}: holds {_what(value)}, not an object")
    return value


# --------------------------------------------------------------------------- run.json
def record_problems(record: dict[str, Any]) -> list[str]:
    """Every key the recap reads that is missing or of the wrong type (all of them, not the first)."""
    problems = []
    for path, (expected, check), required in RECORD_KEYS:
        holder: Any = record
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue  # the parent is absent, or its own problem is reported
        name, value = ".".join(path), holder.get(path[-1])
        if value is None:
            if required:
                problems.append(_wrong(holder, path[-1], expected, name))
        elif not check(value):
            problems.append(_wrong(holder, path[-1], expected, name))
    if not problems and not _comparable_times(record):
        problems.append(
            f"started_at {_shown(record['started_at'])} and finished_at "
            f"{_shown(record['finished_at'])}: one has a time zone, the other not"
        )
    return problems


def _comparable_times(record: dict[str, Any]) -> bool:
    """Whether started_at and finished_at (when present) can be subtracted: both with a time zone or both without."""
    times = [_parse_time(record[key]) for key in ("started_at", "finished_at") if record.get(key)]
    return len({time.tzinfo is None for time in times}) <= 1


def wall_time_s(record: dict[str, Any]) -> float | None:
    """finished_at - started_at in seconds (both checked by ``record_problems``); None when either is absent."""
    if not record.get("started_at") or not record.get("finished_at"):
        return None
    return (_parse_time(record["finished_at"]) - _parse_time(record["started_at"])).total_seconds()


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    values = {}
    for override in overrides or []:
        if "=" in override:
            key, value = override.split("=", 1)
            values[key.lstrip("+~")] = value
    return values


def record_row(record: dict[str, Any]) -> dict[str, Any]:
    """The recap's columns from a run.json; Unreadable naming every wrong key."""
    problems = record_problems(record)
    if problems:
        raise Unreadable("run.json: " + "; ".join(problems))
    row = {
        k: record.get(k)
        for k in (
            "run_id",
            "parent_id",
            "sweep_id",
            "variant",
            "seed",
            "status",
            "stop_cause",
            "mode",
            "error",
            "started_at",
        )
    }
    row.update(
        {
            f"set:{k}": v
            for k, v in parse_overrides(record.get("overrides")).items()
            if k != "seed" and not k.startswith("hydra")
        }
    )
    peak = record.get("peak_memory") or {}
    task = record.get("task") or {}
    row["peak_rss_bytes"] = peak.get("rss_peak_bytes")
    row["peak_cuda_allocated_bytes"] = peak.get("cuda_peak_allocated_bytes")
    row["seconds_per_update"] = record.get("seconds_per_update")
    row["estimated_peak_bytes"] = (record.get("memory_estimate") or {}).get("peak_bytes")
    for share in ("targets_truncated_share", "examples_truncated_share", "tokens_truncated_share"):
        row[share] = task.get(share)
    row["_data"] = json.dumps(task["data"], sort_keys=True) if task.get("data") is not None else None
    row["closing"] = (record.get("closing") or {}).get("verdict")
    row["resumes"] = len(record.get("resumes") or [])
    row["wall_time_s"] = wall_time_s(record)
    return row


def readable_identity(record: Any) -> dict[str, Any]:
    """What an unreadable run.json still tells about the run: its identity keys of the right type."""
    if not isinstance(record, dict):
        return {}
    checks = {path[0]: check for path, (_, check), _ in RECORD_KEYS if len(path) == 1}
    return {k: record[k] for k in IDENTITY if record.get(k) is not None and checks[k](record[k])}


# --------------------------------------------------------------------------- metrics.jsonl
# A line as pilot writes it starts {"kind": ..., "update": ..., "loss": ...} (json.dumps of
# {"kind": k, **UpdateRecord}); loss is a JSON number or what json writes for nan/inf.
JSON_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity"
ROW_START = re.compile(r'\n\{"kind": "(train|val)", "update": (0|[1-9]\d*), "loss": (' + JSON_NUMBER + r")[,}]")
LAST_LINE_KEYS = {
    "train": (("examples_seen", ("an integer >= 0", _is_count)), ("targets_seen", ("an integer >= 0", _is_count))),
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
        raise Unreadable(_json_problem(error)) from None
    except RecursionError:
        raise Unreadable("not JSON (nested too deep)") from None
    if not isinstance(row, dict):
        raise Unreadable(f"{_what(row)}, not an object")
    kind, update, loss = row.get("kind"), row.get("update"), row.get("loss")
    if kind not in ("train", "val"):
        raise Unreadable(_wrong(row, "kind", "'train' or 'val'"))
    if not _is_count(update):
        raise Unreadable(_wrong(row, "update", "an integer >= 0"))
    if not (_is_number(loss) or (loss is None and kind == "val" and "loss" in row)):  # val: null = nothing scored
        raise Unreadable(_wrong(row, "loss", "a number"))
    return kind, update, loss, row


def _check_last_line(row: dict[str, Any], kind: str) -> None:
    for key, (expected, check) in LAST_LINE_KEYS[kind]:
        if row.get(key) is not None and not check(row[key]):
            raise Unreadable(_wrong(row, key, expected))


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
    text = _read_text(path)
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


# --------------------------------------------------------------------------- runs -> rows
def read_run(run_dir: Path) -> dict[str, Any]:
    """One recap row: the run's record and metrics summary, or status ``unreadable`` with the reason."""
    row: dict[str, Any] = {"run_dir": str(run_dir)}
    record: Any = None
    try:
        record = read_json_object(run_dir / "run.json")
        if record.get("mode") in NOT_RUNS:
            return {**row, "mode": record["mode"]}
        row.update(record_row(record))
        row.update(read_metrics(run_dir / "metrics.jsonl"))
    except Unreadable as damage:
        said = f" (run.json says {row['status']})" if row.get("status") else ""
        row.update(readable_identity(record), status="unreadable", stop_cause=f"{damage}{said}")
    return row


def sweep_of(row: dict[str, Any]) -> str:
    """The sweep a run belongs to: its sweep_id, else its parent directory."""
    return row.get("sweep_id") or str(Path(row["run_dir"]).parent)


def collect(paths: Iterable[Path], curves: dict[str, tuple] | None = None, skip: Collection[Path] = ()) -> pd.DataFrame:
    """One row per run directory under ``paths`` (those in ``skip`` left out), sorted by sweep,
    variant, seed and run id, unreadable ones last; ``curves`` (if given) receives
    run_dir -> (metrics rows, validation points)."""
    rows = []
    for run_dir in find_run_dirs(paths):
        if run_dir in skip:
            continue
        row = read_run(run_dir)
        if row.get("mode") in NOT_RUNS:
            continue
        metrics_rows, val = row.pop("_rows", None), row.pop("_val_curve", None)
        if curves is not None and metrics_rows is not None:
            curves[row["run_dir"]] = (metrics_rows, val)
        row["sweep"] = sweep_of(row)
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame = frame.reindex(columns=[*COLUMNS, *(c for c in frame.columns if c not in COLUMNS)])
    frame["seed"] = frame["seed"].astype("Int64")  # integers even beside unreadable rows (no 0.0)
    frame["_unreadable"] = frame["status"] == "unreadable"  # sorted last
    frame = frame.sort_values(["_unreadable", "sweep", "variant", "seed", "run_id"], na_position="last")
    return frame.drop(columns="_unreadable").reset_index(drop=True)
