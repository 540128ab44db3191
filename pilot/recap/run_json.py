"""run.json: every key the recap reads checked (``record_problems``), and the recap's columns from it."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pilot.record_damage import INTEGER, OBJECT, TEXT, TEXTS, Unreadable, is_count, is_number, shown, wrong_value
from pilot.variant import parse_overrides

# every status pilot writes (pilot/train.py, pilot_run.py, estimate_run.py, engine/preemption.py)
STATUSES = ("running", "ok", "diverged", "oom", "failed", "preempted", "requeued", "interrupted")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # how run_record.py writes started_at / finished_at


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)  # Python >= 3.11 also reads run_record's "+0000"
    except ValueError:
        pass
    for written in (TIME_FORMAT, TIME_FORMAT.replace("%S", "%S.%f")):  # Python 3.10: "+0000"; to the millisecond
        try:
            return datetime.strptime(value, written)
        except ValueError:
            pass
    return None


STATUS = ("one of " + ", ".join(STATUSES), lambda v: isinstance(v, str) and v in STATUSES)
TIME = ("a time like 2026-11-30T01:00:00+0000", lambda v: isinstance(v, str) and _parse_time(v) is not None)
AMOUNT = ("a finite number >= 0", lambda v: is_number(v) and 0 <= v < math.inf)  # not NaN, not Infinity
SHARE = ("a number from 0 to 1", lambda v: is_number(v) and 0 <= v <= 1)
FUTURE_S = 86_400.0  # a time later than now by more than a day (clocks of two hosts differ by less): no run wrote it
COUNT = ("an integer >= 0", is_count)
CLOSING_VERDICTS = ("pass", "warn", "fail", "skipped", "incomplete")  # what the closing records (pilot/closing)
VERDICT = ("one of " + ", ".join(CLOSING_VERDICTS), lambda v: isinstance(v, str) and v in CLOSING_VERDICTS)
RESUMES = ("a list of objects", lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v))

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
    (("updates_done",), COUNT, False),
    (("seconds_per_update",), AMOUNT, False),
    (("peak_memory",), OBJECT, False),
    (("peak_memory", "rss_peak_bytes"), AMOUNT, False),
    (("peak_memory", "cuda_peak_allocated_bytes"), AMOUNT, False),
    (("memory_estimate",), OBJECT, False),
    (("memory_estimate", "peak_bytes"), AMOUNT, False),
    (("task",), OBJECT, False),
    (("task", "targets_truncated_share"), SHARE, False),
    (("task", "examples_truncated_share"), SHARE, False),
    (("task", "tokens_truncated_share"), SHARE, False),
    (("closing",), OBJECT, False),
    (("closing", "verdict"), VERDICT, False),
    (("resumes",), RESUMES, False),
)
IDENTITY = ("run_id", "parent_id", "sweep_id", "variant", "seed", "mode")  # kept on an unreadable row when valid


def _rules_by_top_key() -> dict[str, list]:
    """RECORD_KEYS as ``record_problems`` walks them, by top-level key (a record holds a dozen):
    top key -> [(position in RECORD_KEYS, parent keys, key, dotted name, what it must be, check, required)]."""
    rules: dict[str, list] = {}
    for position, (path, (expected, check), required) in enumerate(RECORD_KEYS):
        rules.setdefault(path[0], []).append((position, path[:-1], path[-1], ".".join(path), expected, check, required))
    return rules


_BY_TOP = _rules_by_top_key()
_REQUIRED = [  # (position in RECORD_KEYS, key, what it must be): named when absent
    (position, path[0], expected) for position, (path, (expected, _), required) in enumerate(RECORD_KEYS) if required
]


def record_problems(record: dict[str, Any]) -> list[str]:
    """Every key the recap reads that is missing or of the wrong type (all of them, not the first,
    in RECORD_KEYS order)."""
    found = [
        (position, wrong_value(record, key, expected)) for position, key, expected in _REQUIRED if key not in record
    ]
    for top in _BY_TOP.keys() & record.keys():
        for position, parents, key, name, expected, check, required in _BY_TOP[top]:
            holder: Any = record
            for parent in parents:
                holder = holder.get(parent) if isinstance(holder, dict) else None
            if not isinstance(holder, dict):
                continue  # the parent is absent, or its own problem is reported
            value = holder.get(key)
            if (value is None and required) or (value is not None and not check(value)):
                found.append((position, wrong_value(holder, key, expected, name)))
    problems = [problem for _, problem in sorted(found)]
    if not problems and not _comparable_times(record):
        problems.append(
            f"started_at {shown(record['started_at'])} and finished_at "
            f"{shown(record['finished_at'])}: one has a time zone, the other not"
        )
    elif not problems:
        problems += _time_problems(record)
    return problems


def _time_problems(record: dict[str, Any]) -> list[str]:
    """A finished_at before its started_at (a negative wall time), or a time more than a day ahead of now."""
    times = {key: _parse_time(record[key]) for key in ("started_at", "finished_at") if record.get(key)}
    if len(times) == 2 and times["finished_at"] < times["started_at"]:
        return [f"finished_at {shown(record['finished_at'])} is before started_at {shown(record['started_at'])}"]
    now = time.time()
    return [
        f"{key} {shown(record[key])} is in the future (more than a day after now)"
        for key, at in times.items()
        if (at.timestamp() if at.tzinfo is not None else time.mktime(at.timetuple())) > now + FUTURE_S
    ]


def _comparable_times(record: dict[str, Any]) -> bool:
    """Whether started_at and finished_at (when present) can be subtracted: both with a time zone or both without."""
    times = [_parse_time(record[key]) for key in ("started_at", "finished_at") if record.get(key)]
    return len({time.tzinfo is None for time in times}) <= 1


def wall_time_s(record: dict[str, Any]) -> float | None:
    """The seconds the run ran (both times checked by ``record_problems``; None when either is absent):
    finished_at - started_at, less the time it stood stopped between its attempts when every resume says
    when the attempt before it stopped (``previous_finished_at``) — an interrupted run resumed the next
    day did not run for a day."""
    if not record.get("started_at") or not record.get("finished_at"):
        return None
    start, end = _parse_time(record["started_at"]), _parse_time(record["finished_at"])
    elapsed = (end - start).total_seconds()
    resumes = record.get("resumes") or []
    try:
        stops = [(_parse_time(r["previous_finished_at"]), _parse_time(r["at"])) for r in resumes]
        stopped = sum((resumed - stopped_at).total_seconds() for stopped_at, resumed in stops)
    except (KeyError, TypeError, ValueError):  # an older record, or a resume without those times: elapsed
        return elapsed
    return elapsed - stopped if 0 <= stopped <= elapsed else elapsed


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
    before = [r.get("overrides_before") for r in record.get("resumes") or [] if isinstance(r, dict)]
    # a forced resume changed the overrides: the job a sweep declared is still this run (recap.declared)
    row["_overrides_before"] = json.dumps([o for o in before if isinstance(o, list)]) if any(before) else None
    row["wall_time_s"] = wall_time_s(record)
    return row


def readable_identity(record: Any) -> dict[str, Any]:
    """What an unreadable run.json still tells about the run: its identity keys of the right type."""
    if not isinstance(record, dict):
        return {}
    checks = {path[0]: check for path, (_, check), _ in RECORD_KEYS if len(path) == 1}
    return {k: record[k] for k in IDENTITY if record.get(k) is not None and checks[k](record[k])}
