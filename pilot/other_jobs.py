"""A launch's other jobs, waited for when submitit gave up on one of them.

Hydra's submitit launcher collects its jobs' results in order and raises at the first job that left none (a
job cancelled with ``scancel``, killed): the others were still queued or running, yet the sweep recapped them
as ``running`` and exited while they went on (one then ended ``ok``, its recap never said so). Before that
recap, this waits until none of the launch's other SLURM jobs is queued or running, as ``squeue`` lists them
(each job of the launch is a folder of ``<sweep>/.submitit`` named by its job id). Not a local launch's: its
jobs stop, with their checkpoints, when their launcher ends (``pilot.sweep_signals.watch_launcher``), so
waiting for them would wait for ever on a job that waits for the launcher.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

POLL_S = 2.0


def wait_for_other_jobs(sweep_dir: Path, poll_s: float = POLL_S) -> list[str]:
    """Wait while a job of the launch is still queued or running; ``[]`` once none is, or the ids still
    running when waiting was stopped (Ctrl-C, SIGTERM) or could not be asked (squeue failed)."""
    ids = job_ids(sweep_dir)
    running = queued_on_slurm(ids)
    if not running:
        return []
    print(
        f"pilot: waiting for the launch's other job(s) still queued or running ({', '.join(running)}) before the "
        "recap; Ctrl-C stops waiting (the jobs go on)",
        file=sys.stderr,
    )
    try:
        while running:
            time.sleep(poll_s)
            running = queued_on_slurm(ids)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM/SIGHUP (``SignalStop``): the jobs go on without this process
        print(
            f"pilot: stopped waiting: job(s) {', '.join(running)} still queued or running; the recap says them "
            f"running. Once they end: python -m pilot.recap {sweep_dir}",
            file=sys.stderr,
        )
    return running


def job_ids(sweep_dir: Path) -> list[str]:
    folder = Path(sweep_dir) / ".submitit"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name[:1].isdigit())


def queued_on_slurm(ids: list[str]) -> list[str]:
    """The jobs among ``ids`` that squeue lists (pending, running, completing); ``[]`` where it cannot say."""
    if not ids:
        return []
    try:
        done = subprocess.run(
            ["squeue", "--noheader", "--format=%i", f"--jobs={','.join(ids)}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []  # "Invalid job id specified": every one has left the queue
    return sorted({line.strip() for line in done.stdout.splitlines() if line.strip()})
