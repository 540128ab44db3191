"""How a training run's spawned replicas ended, as the launching process that waited for them records and
says it (``pilot.train``): one process stops the same way on its own.

A signal passed on to the replicas (``pilot.engine.distributed.spawn``) may reach them before any opened the
run's record (a fresh run: nothing claims a run, as one process says it), or before a resume reopened the
record it continues (its ``resumes`` get the attempt's entry, ``pilot.resume.attempt_stopped_before_it_began``:
the launcher exited 143 with no line and no entry), or after the last update (the run is complete; the
launcher stops with the signal's code as one process does: it exited 0)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from pilot.engine.distributed import RankKilled, spawn
from pilot.resume import attempt_stopped_before_it_began
from pilot.run_record import resume_hint, write_json_atomic
from pilot.stopping import signal_entry

log = logging.getLogger("pilot")


def unrecorded(signal_name: str) -> dict:
    """What ended a run that a signal stopped before its record was opened."""
    return {"status": "interrupted", "interrupted_by": [signal_entry(signal_name, 0)], "recorded": False}


def record_bytes(run_dir: Path) -> bytes | None:
    """run.json as it stands (None: none), to tell afterwards whether any replica opened it."""
    try:
        return (Path(run_dir) / "run.json").read_bytes()
    except OSError:
        return None


def replicas_ended(
    run_dir: Path, stopped: str | None, before: bytes | None, overrides: list[str], sweep_dir: Path | None
) -> dict:
    """The run's record once its replicas ended (``stopped``: the first signal passed on to them; ``before``:
    run.json's bytes before they started), or ``unrecorded``'s where no record was opened."""
    now = record_bytes(run_dir)
    if stopped is not None and now is None:
        return unrecorded(stopped)
    if stopped is not None and now == before:  # a resume stopped before any replica reopened its record
        record = attempt_stopped_before_it_began(Path(run_dir), overrides)
        position = int(record.data.get("updates_done") or 0)
        cause = f"interrupted: {stopped} at update {position} (before this attempt began)"
        record.finish(
            "interrupted",
            cause,
            interrupted_by=[*record.data.get("interrupted_by", []), signal_entry(stopped, position)],
        )
        log.warning("%s; %s", cause, resume_hint(overrides, Path(run_dir), sweep_dir))
        return record.data
    if now is None:  # no signal and no record: nothing can say the run ended well (it read as ok, exit 0)
        raise RuntimeError(f"{run_dir}: the replicas ended without writing run.json; their log above says why")
    data = json.loads(now)
    if code := (data.get("signal_after_budget") or {}).get("exit_code"):
        raise SystemExit(int(code))  # complete and recorded: stopped as one process stops (the launcher exited 0)
    return data


def run_replicas(worker: Callable, args: tuple, replicas: int, port: int, run_dir: Path) -> str | None:
    """``spawn``'s replicas, signals passed on to them (the first one's name returned); a rank a signal from
    outside killed is named in the run's record before its error is raised."""
    try:
        return spawn(worker, args, replicas, port, pass_signals=True)
    except RankKilled as killed:
        record_killed_rank(run_dir, killed)
        raise


def record_killed_rank(run_dir: Path, killed: RankKilled) -> None:
    """run.json (written failed by rank 0, with the process group's error) names the rank a signal killed first."""
    path = Path(run_dir) / "run.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return  # no record yet: the launcher's own error says it
    if data.get("status") in ("failed", "running"):
        earlier = data.get("error")
        data.update(status="failed", error=f"{killed}" + (f" ({earlier})" if earlier else ""))
        data.update(killed_rank={"rank": killed.rank, "signal": killed.signal_name})
        write_json_atomic(path, data)
