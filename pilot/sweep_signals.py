"""Ctrl-C on a sweep whose jobs run in their own processes on this machine (submitit's local
launcher, ``hydra/launcher=local_parallel``).

The terminal sends SIGINT to every process of the foreground group: this process, submitit's
controller of each job (``python -m submitit.local._local``) and the jobs. Each job stops at its
signal and records it (a checkpoint of the update in progress, ``interrupted``). The controllers,
though, died with a ``KeyboardInterrupt`` traceback each and then signalled their job a second
time, which stops a job at once, without its checkpoint.

``LocalJobsStopThemselves`` (a Hydra callback) holds SIGINT, SIGTERM and SIGHUP in this process from the
start of such a multirun (``pilot.startup_signals.hold_signals``): the thread that starts the jobs
blocks them, so the controllers never act on them, and each job takes up one that arrived while it
started as soon as pilot is imported there (noted, not lost): a Ctrl-C reaches each job once. This
process then waits for the jobs as usual and writes the recap of what they recorded
(``pilot.__main__``: exit 130 when a job was interrupted). Jobs run in this process (the basic
launcher) or on a cluster are left as they are.

What this process receives goes on to every job, those started after it included: SIGTERM (``kill``,
a scheduler) and a Ctrl-C or hangup sent to this process alone would otherwise reach no job, and one
of the terminal's, which reached the running jobs too, is taken by each as one signal (the same
signal again within two seconds is the same event there). Each job stops as at a Ctrl-C, recorded
with the signal's name; this process waits for them, writes the recap and exits with 128 + its
number (``received``). A second SIGTERM stops it at once. A hangup (SIGHUP: the terminal or ssh
session closed) is taken as a Ctrl-C is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

import psutil
from omegaconf import OmegaConf

from pilot.startup_signals import LAUNCHER_GONE, LOCAL_JOB, SignalStop, hold_signals, note_in_local_job

try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency
    Callback = object

LOCAL_LAUNCHER = "LocalLauncher"  # hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher


_received: list[str] = []  # the signals this launching process received, in order
_reached: set[int] = set()  # job processes the signal was passed on to


class LocalJobsStopThemselves(Callback):
    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if target.rsplit(".", 1)[-1] == LOCAL_LAUNCHER:
            hold_signals(_stop_jobs)
            os.environ[LAUNCHER_ENV] = _identity(psutil.Process())  # its jobs watch this process, by name

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        if os.environ.get("SUBMITIT_EXECUTOR") == "local":  # after submitit took SIGTERM for itself
            note_in_local_job()
            watch_launcher()


LAUNCHER_POLL_S = 1.0


def watch_launcher() -> None:
    """A job of the local launcher stops when the launching process is gone without a word (killed with
    -9: it could pass nothing on, and submitit's controller of the job, orphaned, goes on waiting): as at
    the SIGTERM the launcher would have passed on — a checkpoint of the update in progress, recorded
    ``interrupted``, resumable — instead of training on, unseen, beside the next launch."""
    try:
        controller = psutil.Process(os.getppid())  # submitit's controller; its parent: the launching process
    except psutil.Error:
        return
    launcher = os.environ.get(LAUNCHER_ENV, "")  # "pid:start time", set by the launcher before any job
    if not launcher:  # a launcher of an earlier pilot: its controller's parent, read now
        try:
            launcher = _identity(psutil.Process(controller.ppid()))
        except psutil.Error:
            return

    def watch() -> None:
        while True:
            time.sleep(LAUNCHER_POLL_S)
            if (gone := _gone(controller, launcher)) is not None:
                print(
                    f"pilot: {gone} is gone (killed?): this job stops as at SIGTERM (its checkpoint kept; the same "
                    "command with its hydra.run.dir resumes it)",
                    file=sys.stderr,
                    flush=True,
                )
                os.environ[LAUNCHER_GONE] = gone  # the record says why: no one sent it
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="pilot-launcher-watch", daemon=True).start()


LAUNCHER_ENV = "PILOT_LAUNCHER"  # the launching process, "pid:start time": its jobs inherit it


def _identity(process: psutil.Process) -> str:
    return f"{process.pid}:{process.create_time()}"


def _running(identity: str) -> bool:
    """Whether the process named by ``_identity`` still runs (a pid reused by another process does not)."""
    pid = identity.partition(":")[0]
    try:
        process = psutil.Process(int(pid))
        return _identity(process) == identity and process.status() != "zombie"
    except (psutil.Error, ValueError):
        return False


def _gone(controller: psutil.Process, launcher: str) -> str | None:
    """Which of the job's submitit controller and the sweep's launching process is gone, as the record
    names it (the launcher first: a controller dies with it); None while both run. The launcher is named by
    its pid and start time, set before any job started: a launcher killed while its jobs were starting was
    read as the orphaned controller's new parent (init), which never ends, and its jobs trained on unseen."""
    pid = launcher.partition(":")[0]
    if not _running(launcher):
        return f"the launching process (pid {pid})"
    try:
        if controller.is_running() and controller.status() != "zombie":
            return None
    except psutil.Error:
        pass
    return f"submitit's controller of this job (pid {controller.pid})"


def _jobs() -> list[psutil.Process]:
    jobs = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # ended meanwhile
            if LOCAL_JOB in child.cmdline():
                jobs.append(child)
    return jobs


def _stop_jobs(signum: int, frame: Any) -> None:
    """This process's handler (on the launcher's threads; its own thread holds the signals, so the
    processes it starts begin with them held). Whatever it is, it goes on to every job: a Ctrl-C or
    a hangup of the terminal reached the jobs of its group too, but one sent to this process alone
    (``kill -INT``, ``kill -HUP``) did not, and this process cannot tell which; a job takes the same
    signal twice within ``LOCAL_JOB_ONE_EVENT_S`` as one (``pilot.engine.preemption``). A second
    SIGTERM stops this process at once (its jobs have theirs)."""
    name = signal.Signals(signum).name
    if name in _received:
        if signum == signal.SIGTERM:
            raise SignalStop(name)
        return
    if not _received:
        threading.Thread(target=_pass_on, args=(signum,), name="pilot-pass-on-signal", daemon=True).start()
    _received.append(name)


def _pass_on(signum: int) -> None:
    """Every job this launch starts, once, until this process ends."""
    while True:
        for job in _jobs():
            if job.pid not in _reached:
                _reached.add(job.pid)
                with contextlib.suppress(psutil.Error):
                    job.send_signal(signum)
        time.sleep(0.2)


def received() -> str | None:
    """The signal this launching process passed on to its jobs (None: none)."""
    return _received[0] if _received else None
