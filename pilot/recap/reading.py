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

Parts: ``pilot.record_damage`` (what a value must be, ``Unreadable``), ``run_json`` and
``pilot.metrics_reading`` (the two files; metrics.jsonl's reader sits below the runs that stamp their
summary with it at their end); here: finding run directories and one row per run.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Collection, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from pilot.child_process import die_with_parent
from pilot.cpu_budget import cpu_budget
from pilot.errors import PilotError
from pilot.metrics_reading import read_metrics, stamped_curves, training_points, unchanged_summary
from pilot.recap.run_json import readable_identity, record_row
from pilot.record_damage import Unreadable, read_json_object
from pilot.run_record import STAMP, abandoned, resume_hint

RUN_MARKERS = ("run.json", "metrics.jsonl", ".hydra")  # any of these makes a directory a run directory
NOT_WALKED = (".hydra", "checkpoints", "export", "resume_check")  # inside a run directory: never runs
NOT_RUNS = ("pilot", "estimate")  # run.json modes that hold no training run: left out of the recap's tables
NOT_A_RUN = "_not_a_run"  # a row of a NOT_RUNS record (``collect`` keeps them apart: ``frame.attrs``)
PILOTS_AND_ESTIMATES = "pilots_and_estimates"  # ``collect``'s frame.attrs key: their rows, listed apart
CURVE_BATCH_BYTES = 1 << 20  # metrics.jsonl text whose training points are read at once (training_points)
RUNS_PER_PROCESS = 1000  # fewer runs than this per process: read in this process alone (a fork costs ~50 ms)
# why a run.json still says running when no process holds it (a full disk or a directory made read-only:
# run.json could not be written)
ENDED_UNSAID = (
    "it ended without recording how (killed: SIGKILL, out of memory, a power loss, or a full disk or read-only "
    "directory its record could not be written to?)"
)
# columns of every recap frame, even when no run could be read
COLUMNS = ("run_dir", "sweep", "sweep_id", "run_id", "parent_id", "variant", "seed", "status", "stop_cause")


class RecapRefused(PilotError, ValueError):
    """A path given to the recap does not exist or is not a directory; nothing was written."""


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


def _walk(directory: str, found: set[str], links: list[str]) -> None:
    """Add ``directory`` and every directory below it that holds a run marker to ``found``, and the
    symbolic links to directories below it to ``links`` (walked apart, once each: a folder of links to
    runs is read, a link back up is not walked twice). As ``os.walk`` sees them (an unreadable directory
    skipped), without its ``lstat`` of every directory: 10,000 run directories."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError:
        return
    is_run = any(entry.name in RUN_MARKERS for entry in entries)
    if is_run:
        found.add(directory)
    for entry in entries:
        try:
            walk_into, linked = entry.is_dir(), entry.is_symlink()
        except OSError:
            walk_into = linked = False
        if walk_into and not (is_run and entry.name in NOT_WALKED):
            if linked:
                links.append(os.path.join(directory, entry.name))
            else:
                _walk(os.path.join(directory, entry.name), found, links)


def _run_dirs(paths: Iterable[Path]) -> list[str]:
    """Every directory under ``paths`` that is (or was meant to be) a run directory, sorted as text;
    one directory named two ways (``sweep`` and its absolute path, ``a/../sweep``, a link to it) once,
    as first named."""
    by_real: dict[str, str] = {}
    roots = [os.fspath(root) for root in check_paths(paths)]
    walked: list[str] = []  # real paths read so far: a link into one of them adds nothing
    while roots:
        spelled = roots.pop(0)
        real = os.path.realpath(spelled)
        walked.append(real)
        found: set[str] = set()
        links: list[str] = []
        _walk(spelled, found, links)
        for directory in sorted(found):
            by_real.setdefault(real + directory[len(spelled) :], directory)
        roots += [link for link in links if not any(within(os.path.realpath(link), done) for done in walked)]
    return sorted(by_real.values())  # sorted as text: 10,000 Path comparisons cost 0.25 s


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both absolute, as text)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every directory under ``paths`` that is (or was meant to be) a run directory."""
    return [Path(p) for p in _run_dirs(paths)]


def read_run(run_dir: Path | str, curve: bool = False) -> dict[str, Any]:
    """One recap row: the run's record and metrics summary, or status ``unreadable`` with the reason
    (``curve``: with the training points the picture draws)."""
    run_dir = os.fspath(run_dir)
    row: dict[str, Any] = {"run_dir": run_dir}
    record: Any = None
    try:
        record = read_json_object(os.path.join(run_dir, "run.json"))
        if record.get("mode") in NOT_RUNS:  # kept aside by ``collect``: how it ended, not compared
            said = {k: record[k] for k in ("run_id", "status", "stop_cause") if isinstance(record.get(k), str)}
            if said.get("status") == "running" and (gone := abandoned(run_dir)):  # killed before its verdict
                said["stop_cause"] = f"{gone}: {ENDED_UNSAID}"
            return {**row, "mode": record["mode"], **said, NOT_A_RUN: True}
        row.update(record_row(record))
        if row.get("status") == "running" and (gone := abandoned(run_dir)):  # run.json's last word
            row["stop_cause"] = _abandoned_cause(record, run_dir, gone)
        path = os.path.join(run_dir, "metrics.jsonl")
        stamped = unchanged_summary(record.get(STAMP), path)  # the file as the run's end read it: not again
        if stamped is not None and curve:  # the picture's points still come from the file
            stamped = stamped_curves(path, stamped)
        metrics = stamped if stamped is not None else read_metrics(path, curve)
        _metrics_hold_the_record(record, metrics)  # before any of its values enter the row: none stand unread
        metrics.pop("last_val_update", None)
        row.update(metrics)
    except Unreadable as damage:
        said = f" (run.json says {row['status']})" if row.get("status") else ""
        row.update(readable_identity(record), status="unreadable", stop_cause=f"{damage}{said}")
    return row


def _metrics_hold_the_record(record: dict[str, Any], row: dict[str, Any]) -> None:
    """A finished run's metrics.jsonl must reach what its run.json says: updates short of its
    ``updates_done`` (a file emptied or cut), or an ``ok`` run's final validation missing (its last line
    cut: an earlier point would stand in for the final one) make the run unreadable, not a number."""
    done, status = record.get("updates_done"), record.get("status")
    if status not in ("ok", "diverged") or not isinstance(done, int) or isinstance(done, bool):
        return  # a run stopped by an error or a signal may have counted an update it did not log
    if row.get("updates_done", 0) < done:
        raise Unreadable(
            f"metrics.jsonl: ends at update {row.get('updates_done', 0)} but run.json says {done} updates were "
            "done (the file was cut short or emptied)"
        )
    val = row.get("_val_curve") or []
    last_val = val[-1][0] if val else row.get("last_val_update")  # a stamped summary keeps the last point's update
    if status == "ok" and last_val is None:  # every ok run validates after its last update (train.py)
        raise Unreadable(
            f"metrics.jsonl: the final validation (after update {done}) is missing, and no validation line is left "
            "(the file's end was cut?): the run's result is not there"
        )
    if status == "ok" and last_val < done:
        raise Unreadable(
            f"metrics.jsonl: the final validation (after update {done}) is missing, its last point is at update "
            f"{last_val} (the file's end was cut?): that point would stand in for the run's result"
        )


def _abandoned_cause(record: dict[str, Any], run_dir: str, gone: str) -> str:
    """Why a run no process holds stopped, and the command that continues it (a sweep's job: its own
    overrides, not the sweep's -m line, which starts every job anew), from its checkpoint if it has one."""
    checkpoints = os.path.join(run_dir, "checkpoints")
    saved = os.path.isdir(checkpoints) and any(name.startswith("ckpt-") for name in os.listdir(checkpoints))
    sweep = Path(run_dir).parent if record.get("sweep_id") else None
    hint = resume_hint([str(o) for o in record.get("overrides") or []], Path(run_dir), sweep)
    start = "from its last checkpoint" if saved else "from update 0: it wrote no checkpoint"
    return f"{gone}: {ENDED_UNSAID}; {hint} ({start})"


def sweep_of(row: dict[str, Any]) -> str:
    """The sweep a run belongs to: its sweep_id, else its parent directory."""
    return row.get("sweep_id") or str(Path(row["run_dir"]).parent)


class _Curves:
    """Fills ``curves`` (run_dir -> training points, validation points) as runs are read; the
    training points of files pilot wrote are read together, a megabyte at a time (training_points)."""

    def __init__(self, curves: dict[str, tuple]) -> None:
        self.curves, self.pending, self.pending_bytes = curves, {}, 0

    def keep(self, row: dict[str, Any]) -> None:
        body, train, val = row.pop("_train_body", None), row.pop("_train_curve", None), row.pop("_val_curve", None)
        if body is not None:
            self.pending[row["run_dir"]] = (body, val)
            self.pending_bytes += len(body)
            if self.pending_bytes >= CURVE_BATCH_BYTES:
                self.flush()
        elif train is not None:
            self.curves[row["run_dir"]] = (train, val)

    def flush(self) -> None:
        points = training_points([body for body, _ in self.pending.values()])
        for (run_dir, (_, val)), train in zip(self.pending.items(), points):
            self.curves[run_dir] = (train, val)
        self.pending, self.pending_bytes = {}, 0


def read_runs(run_dirs: list[str], picture: bool) -> tuple[list[dict[str, Any]], dict[str, tuple] | None]:
    """The rows of ``run_dirs``, in order (a pilot's or an estimate's marked ``NOT_A_RUN``), and (``picture``)
    the training runs' curves."""
    curves: dict[str, tuple] | None = {} if picture else None
    reader = _Curves(curves) if curves is not None else None
    rows = []
    for run_dir in run_dirs:
        row = read_run(run_dir, curve=picture)
        if row.get(NOT_A_RUN):
            rows.append(row)
            continue
        if reader is not None:
            reader.keep(row)
        row.pop("_val_curve", None)
        row["sweep"] = sweep_of(row)
        rows.append(row)
    if reader is not None:
        reader.flush()
    return rows, curves


def reading_processes(runs: int) -> int:
    """Processes that read ``runs`` run directories: one per ``RUNS_PER_PROCESS`` runs, at most the
    CPUs this process may use; one (this process) where forking is not safe: not Linux, or another
    Python thread alive that a forked child could find holding a lock. The forked readers use no
    BLAS or OpenMP (``metrics_reading.training_points``): after torch's thread pools, as in Hydra's
    multirun callback, a child that entered one would wait forever."""
    if not fork_is_safe():
        return 1
    return max(1, min(cpu_budget()[0], runs // RUNS_PER_PROCESS))


def fork_is_safe() -> bool:
    """Linux, and no other Python thread alive that a forked child could find holding a lock."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _read_all(run_dirs: list[str], curves: dict[str, tuple] | None) -> list[dict[str, Any]]:
    """``read_runs`` over every run, split among ``reading_processes`` processes; the rows in order."""
    picture = curves is not None
    size = max(1, -(-len(run_dirs) // reading_processes(len(run_dirs))))
    shares = [run_dirs[start : start + size] for start in range(0, len(run_dirs), size)]
    results = _forked(shares, picture) if len(shares) > 1 else [read_runs(share, picture) for share in shares]
    rows = []
    for share_rows, share_curves in results:
        rows += share_rows
        if curves is not None:
            curves.update(share_curves)
    return rows


def _forked(shares: list[list[str]], picture: bool) -> list[tuple[list, dict | None]]:
    """``read_runs`` of each share, the first in this process and each other one in a forked
    process; a share whose process fails (killed, out of memory) or never starts (no process left
    under a pids limit, a daemon process) is read here: no run is lost."""
    results: list[tuple[list, dict | None] | None] = [None] * len(shares)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(len(shares) - 1, context, initializer=reader_start, initargs=(os.getpid(),)) as pool:
            pending = [(index, pool.submit(read_runs, shares[index], picture)) for index in range(1, len(shares))]
            results[0] = read_runs(shares[0], picture)
            for index, future in pending:
                try:
                    results[index] = future.result()
                except Exception:
                    continue
    except Exception:  # the pool could not start or submit: what is not read yet is read below
        pass
    return [result if result is not None else read_runs(share, picture) for share, result in zip(shares, results)]


def reader_start(parent: int) -> None:
    """A process forked to read (or draw) for the recap: killed with it (kill -9, the out-of-memory killer)
    rather than left blocked writing its result to a pipe no one reads, and ended at once by SIGTERM and
    SIGHUP (the recap's own handlers raise in Python, which a process blocked in that write never runs)."""
    die_with_parent(parent)
    for name in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(name, signal.SIG_DFL)


def collect(paths: Iterable[Path], curves: dict[str, tuple] | None = None, skip: Collection[Path] = ()) -> pd.DataFrame:
    """One row per run directory under ``paths`` (those in ``skip`` left out), sorted by sweep,
    variant, seed and run id, unreadable ones last; ``curves`` (if given) receives
    run_dir -> (training points, validation points), as the picture draws them. Pilots and estimates
    (``NOT_RUNS``) are no rows: ``frame.attrs[PILOTS_AND_ESTIMATES]`` lists them (run_dir, mode, status,
    stop_cause)."""
    skipped = {os.fspath(Path(p)) for p in skip}
    rows = _read_all([run_dir for run_dir in _run_dirs(paths) if run_dir not in skipped], curves)
    runs: list[dict[str, Any]] = []
    apart: list[dict[str, Any]] = []
    for row in rows:
        (apart if row.pop(NOT_A_RUN, False) else runs).append(row)
    frame = pd.DataFrame(runs)
    frame = frame.reindex(columns=[*COLUMNS, *(c for c in frame.columns if c not in COLUMNS)])
    frame["seed"] = frame["seed"].astype("Int64")  # integers even beside unreadable rows (no 0.0)
    frame["_unreadable"] = frame["status"] == "unreadable"  # sorted last
    frame = frame.sort_values(["_unreadable", "sweep", "variant", "seed", "run_id"], na_position="last")
    frame = frame.drop(columns="_unreadable").reset_index(drop=True)
    frame.attrs[PILOTS_AND_ESTIMATES] = apart  # pilots and estimates: no training run, each said how it ended
    return frame
