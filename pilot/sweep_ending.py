"""How a sweep ends, as the command's exit code and last words: complete, incomplete (a job failed,
was refused or never started: its recap says which), interrupted by a signal, or left without a
result by submitit (a job killed). Called by ``pilot.__main__`` after Hydra returns or raises."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from pilot.other_jobs import wait_for_other_jobs
from pilot.recap.entry import (
    failed_jobs,
    launch_config,
    never_started_jobs,
    pilots_not_passed,
    recap_interrupted_launch,
    recap_not_written,
    refused_jobs,
)
from pilot.run_directory import remove_unstarted_jobs
from pilot.run_record import NO_PROCESS
from pilot.startup_signals import SENT_BY_NO_ONE, signal_name_of
from pilot.sweep_signals import received as passed_on_to_jobs


class SweepIncomplete(SystemExit):
    """Exit 1 (a job failed, its recap not written) or 2 (a job refused) after a sweep that ran: not Hydra refusing the line
    (a launcher's jobs run elsewhere, so this process never composed a job's config itself)."""


def sweep_ending() -> None:
    """After a sweep that ran: exit 1 when its recap is missing, a job failed or a pilot did not pass, 2 when a
    job was refused (a script must not go on); nothing after a single run."""
    not_passed = pilots_not_passed()  # a sweep of pilots gates a script as one pilot does (counted once per launch)
    if recap_not_written():  # the sweep ran, but the recap it promised is not there: a script must not go on
        raise SweepIncomplete(1)
    if refused := refused_jobs():  # a job refused at run time (its directory holds another run): not run
        print(
            f"pilot: {len(refused)} job(s) of the sweep were refused, nothing done in their directories (each "
            f"said why above): {', '.join(refused[:5])}{' ...' if len(refused) > 5 else ''}",
            file=sys.stderr,
        )
        raise SweepIncomplete(2)
    if never := never_started_jobs():  # declared, no directory: refused or lost in a job's own process
        print(f"pilot: the sweep is incomplete: {never[0]}", file=sys.stderr)
        failed_jobs()
        raise SweepIncomplete(1)
    if failed := failed_jobs():  # a job that failed (an error, a full disk): the sweep is not complete
        print(
            f"pilot: {len(failed)} job(s) of the sweep failed (status failed: each run.json says why; unreadable: "
            "no record, its __main__.log says why): "
            f"{', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}",
            file=sys.stderr,
        )
        raise SweepIncomplete(1)
    if not_passed:
        print(
            f"pilot: {len(not_passed)} pilot(s) or estimate(s) of the sweep did not pass (a pilot verdict fail, oom "
            f"or incomplete, or an estimate refused; each report.md or run.json says why): "
            f"{'; '.join(not_passed[:5])}{' ...' if len(not_passed) > 5 else ''}",
            file=sys.stderr,
        )
        raise SweepIncomplete(1)


def sweep_interrupted(name: str) -> None:
    """A signal while a sweep runs (Ctrl-C, SIGTERM): one message and 128 + its number, not Hydra's
    and submitit's tracebacks. Jobs run in this process are recorded (each stops at its signal): the
    recap is written now. Jobs in their own processes (local_parallel) record their own ending; the
    recap is the command to run once they have stopped."""
    config = launch_config()
    sweep = config.hydra.sweep.dir
    code = 128 + int(getattr(signal, name))
    if "submitit" not in str(OmegaConf.select(config, "hydra.launcher._target_", default="")):
        recap_after_signal(name)
        raise SystemExit(code) from None
    print(
        f"pilot: the sweep was interrupted ({name}). Its jobs run in their own processes: each records in its "
        "run.json how it ended (an interrupted one resumes with its own overrides and hydra.run.dir=<its "
        f"directory>). The recap, once they have stopped: python -m pilot.recap {sweep}",
        file=sys.stderr,
    )
    raise SystemExit(code) from None


def recap_after_signal(name: str) -> None:
    """A sweep whose jobs ran in this process, stopped by signal ``name``: said, then the recap of what its
    jobs recorded. A second signal while the recap is written (Ctrl-C pressed twice, a scheduler's SIGTERM
    sent again) stops it: said in one line with the command that writes it, 128 + that signal's number, no
    traceback (the recap leaves no file of its own behind: ``outputs.build_recap``)."""
    sweep = launch_config().hydra.sweep.dir
    print(f"pilot: the sweep was interrupted ({name})", file=sys.stderr)  # the recap says what its jobs recorded
    try:
        remove_unstarted_jobs()  # a job stopped as Hydra made its directory: never started, not unreadable
        recap_interrupted_launch(f"interrupted ({name})")
    except KeyboardInterrupt as again:  # Ctrl-C, or SIGTERM/SIGHUP (``SignalStop``)
        second = signal_name_of(again)
        print(
            f"pilot: {second} while the recap was written: it was not written (each job's run.json says how it "
            f"ended). Write it with: python -m pilot.recap {sweep}",
            file=sys.stderr,
        )
        raise SystemExit(128 + int(getattr(signal, second))) from None


def sweep_job_without_result(error: Exception) -> None:
    """submitit found a job that left no result (stopped by a signal, killed, out of memory): one
    message, the recap of what the launch made (each job's run.json says how it ended), and the exit
    code of an interrupted sweep (130, 143 for a SIGTERM passed on to the jobs) when a job recorded a
    signal, else 1."""
    config = launch_config()
    if config is not None and str(OmegaConf.select(config, "hydra.launcher._target_") or "").endswith("SlurmLauncher"):
        wait_for_other_jobs(Path(str(config.hydra.sweep.dir)))  # its other jobs go on: recapped once they end
    frame = recap_interrupted_launch("stopped: a job left submitit no result")  # each job's run.json says how it ended
    statuses = set(frame["status"]) if frame is not None and "status" in frame else set()
    unsent = _stopped_unsent(frame)
    if passed_on_to_jobs() is None and unsent:  # no signal here: a job found its controller (or launcher) gone
        print(
            f"pilot: a sweep job stopped without a signal sent to this sweep: {unsent} (each interrupted job resumes "
            "with its own overrides and hydra.run.dir=<its directory>)",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    if "interrupted" in statuses or passed_on_to_jobs() is not None:
        name = passed_on_to_jobs() or _signal_a_job_recorded(frame)  # none here: sent to the job (scancel)
        print(
            f"pilot: the sweep was interrupted ({name}): each interrupted job resumes with its own overrides and "
            "hydra.run.dir=<its directory>; with a fixed hydra.sweep.subdir "
            "(e.g. 'hydra.sweep.subdir=lr${optim.lr}') the same -m command resumes them all",
            file=sys.stderr,
        )
        raise SystemExit(128 + int(getattr(signal, name))) from None
    running = _still_running(frame)
    print(
        f"pilot: a sweep job left submitit no result ({str(error).splitlines()[0]})"
        + (f"; killed before it recorded its end (no process holds its lock): {', '.join(running)}" if running else ""),
        file=sys.stderr,
    )
    raise SystemExit(1) from None


def _stopped_unsent(frame: Any) -> str:
    """The first interrupted job's stop cause when every interrupted job was stopped by no one (its
    submitit controller or the launching process gone: ``sweep_signals.watch_launcher``); else ""."""
    if frame is None or "status" not in frame or "stop_cause" not in frame:
        return ""
    causes = [str(cause) for cause in frame.loc[frame["status"] == "interrupted", "stop_cause"]]
    return causes[0] if causes and all(SENT_BY_NO_ONE in cause for cause in causes) else ""


def _signal_a_job_recorded(frame: Any) -> str:
    """The signal the first interrupted job names in its stop cause ("interrupted: SIGTERM at update 219"):
    one sent to that job alone (SLURM's scancel) is no Ctrl-C of this sweep."""
    if frame is not None and {"status", "stop_cause"} <= set(frame):
        for cause in frame.loc[frame["status"] == "interrupted", "stop_cause"].astype(str):
            if (found := re.match(r"interrupted: (SIG[A-Z0-9]+)", cause)) and hasattr(signal, found.group(1)):
                return found.group(1)
    return "SIGINT"


def _still_running(frame: Any) -> list[str]:
    """The run directories whose record still says ``running`` though no process holds them (the recap's
    stop cause: a job killed before it could record its end), not those of jobs still stopping."""
    if frame is None or not {"status", "run_dir", "stop_cause"} <= set(frame):
        return []
    held = frame["status"].eq("running") & frame["stop_cause"].astype(str).str.startswith(NO_PROCESS)
    return [str(run_dir) for run_dir in frame.loc[held, "run_dir"]]
