"""What a job's run.json says about how it ended, for the console's last words on that job: its status
beside a message that claims a record, the command that goes on from it, and whether a refusal was
recorded as the run's failure (a check run after the record opened)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pilot.errors import RECORD_CLAIM
from pilot.run_record import job_line, resume_hint


def _record(run_dir: Path) -> dict[str, Any] | None:
    """``run_dir``'s run.json, or None where there is none readable as a record."""
    try:
        record = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def as_recorded(said: str, run_dir: Path) -> str:
    """``said``, its claim that run.json says where the run stopped kept only where run.json does (a read-only
    file system refuses run.json's last write too: it still says running)."""
    status = (_record(run_dir) or {}).get("status")
    if status not in (None, "running"):
        return said
    where = "it still says running" if status else "there is none"
    return said.replace(RECORD_CLAIM, f"run.json could not record where the run stopped: {where}")


def job_command(run_dir: Path, overrides: list[str]) -> str:
    """How a sweep's job that stopped on a fix the user can make goes on: a training run resumes in its directory
    (its own overrides); a pilot or an estimate starts afresh in a new one."""
    if (_record(run_dir) or {}).get("mode") == "train":
        return resume_hint(overrides, run_dir, run_dir.parent)
    return f"run this job again in a new directory: python -m pilot {job_line(overrides)}"


def recorded_as(run_dir: Path) -> str:
    """ "; <run.json> records it (status <s>)" as the record says, or nothing where there is none."""
    record = _record(run_dir)
    return "" if record is None else f"; {Path(run_dir) / 'run.json'} records it (status {record.get('status')})"


def recorded_failed_by(error: Exception, run_dir: Path) -> bool:
    """Whether ``run_dir``'s run.json records this job failed by ``error`` (a check of the task's contract run
    after the record opened): said as a failed job, not as a refusal that did nothing in its directory."""
    record = _record(run_dir) or {}
    said = f"{type(error).__name__}: {str(error)[:80]}"
    return record.get("status") == "failed" and str(record.get("error")).startswith(said)
