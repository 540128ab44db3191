"""Entry point: ``python -m pilot [overrides]`` (Hydra app; ``-m`` for multirun)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from pilot import host_memory_cap
from pilot.config import register
from pilot.config.command_line import (
    flags_first,
    names_hydras_key,
    refuse_added_twice,
    refuse_unreadable_flags,
    refuse_unusable,
    repeated_keys,
    separated_numbers,
    without_node_details,
)
from pilot.config.help import CONF_DIR as PILOTS_CONF
from pilot.config.suggest import suggestions
from pilot.config.values import enum_value, written_overrides
from pilot.errors import (
    OUT_OF_MEMORY_FIX,
    DiskFull,
    PilotError,
    RunFinished,
    access_denied,
    built_with_error,
    for_one_job,
    in_one_line,
    in_the_way,
    instantiation_failed,
    no_space_left,
    out_of_memory,
    out_of_memory_line,
    user_error,
)
from pilot.estimate_run import run_estimate
from pilot.faults import fault_point
from pilot.hydra_files import close_job_log
from pilot.job_records import as_recorded, job_command, recorded_as, recorded_failed_by
from pilot.pilot_run import run_pilot
from pilot.process_exit import exit_code_of, exit_now, leave_submitit_job_without_teardown, signal_of_exit_code
from pilot.recap.entry import (
    failed_jobs,
    launch_config,
    never_started_jobs,
    note_refused_job,
    recap_interrupted_launch,
    recap_not_written,
    refused_jobs,
)
from pilot.run_directory import (
    RunDirectoryRefused,
    after_refusal,
    hydra_was_writing,
    settle_failed_sweep,
    settle_refused_sweeps,
    unsettled_run_directories,
)
from pilot.run_ending import ERROR_FILE, train_exit_code
from pilot.startup_signals import raise_from_now_on, signal_name_of
from pilot.sweep_ending import (
    SweepIncomplete,
    recap_after_signal,
    sweep_ending,
    sweep_interrupted,
    sweep_job_without_result,
)
from pilot.sweep_signals import received as passed_on_to_jobs
from pilot.train import train
from pilot.validation.outside_the_yaml import key_outside_the_yaml
from pilot.validation.unread import unread_hydra_settings, unread_settings

register()
log = logging.getLogger("pilot")
CONF_DIR = str(PILOTS_CONF)  # absolute: works for `pilot` too


SIGNALLED = 128  # an exit code of 128 + a signal's number: the run was stopped by that signal


SUBMITIT_JOB_ERRORS = ("UncompletedJobError", "FailedJobError")  # a job without a result, one that raised
_STARTED = time.time()  # a run.json changed since then was written by this line
_composed = False  # set once Hydra hands over a config: a SystemExit(1) before it is Hydra refusing the line


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    _run(cfg)
    leave_submitit_job_without_teardown()  # returned (no exit code raised): a submitit job's end ~1 s sooner


def _run(cfg: DictConfig) -> None:
    """The run, pilot or estimate the config says, in Hydra's job (``main``)."""
    global _composed
    _composed = True
    hydra_cfg = HydraConfig.get()
    fault_point("job", hydra_cfg.job.get("num"))  # tests: a signal once Hydra wrote the job's directory (job N)
    host_memory_cap.enable()  # a CPU run's allocations meet a limit, not the OOM killer (pilot/host_memory_cap.py)
    run_dir = Path(hydra_cfg.runtime.output_dir)
    overrides = written_overrides()  # as typed: '${x}' too
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    # the sweep this config would launch with -m: the campaign plan's jobs
    params = hydra_cfg.sweeper.get("params") if not multirun else None
    sweep_params = {str(k): str(v) for k, v in params.items()} if params else None
    launcher = hydra_cfg.runtime.choices.get("hydra/launcher")
    if not multirun and launcher not in (None, "basic"):
        log.warning(  # hydra/launcher=local_parallel without -m: Hydra ignores it
            "hydra/launcher=%s starts the jobs of a sweep (-m); without -m this one run starts here, in this "
            "process. Add -m to launch through it.",
            launcher,
        )
    hydra_given = [str(o) for o in hydra_cfg.overrides.hydra]
    for line in unread_settings(cfg, overrides, dict(hydra_cfg.runtime.choices)) + unread_hydra_settings(
        hydra_given, multirun
    ):
        log.warning("%s", line)
    try:
        if enum_value(cfg.mode) == "pilot":
            exit_code = run_pilot(cfg, run_dir, overrides, sweep_params, searchpath=list(hydra_cfg.searchpath))
            if exit_code and (not multirun or exit_code >= SIGNALLED):  # a fail gates a script; a signal
                sys.exit(exit_code)  # also stops the rest of a sweep (its next job ran, the sweep exited 0)
        elif enum_value(cfg.mode) == "estimate":
            exit_code = run_estimate(cfg, run_dir, overrides, sweep_params)
            if exit_code and (not multirun or exit_code >= SIGNALLED):
                sys.exit(exit_code)
        else:
            if sweep_params and any("," in value or "(" in value for value in sweep_params.values()):
                log.warning(  # +experiment=lr_sweep without -m: one job, not the declared sweep
                    "this config declares a sweep (hydra.sweeper.params: %s); without -m only this one run "
                    "starts. Add -m to run every job of the sweep.",
                    ", ".join(f"{k}={v}" for k, v in sweep_params.items()),
                )
            sweep_dir = Path(hydra_cfg.sweep.dir) if multirun else None
            record = train(cfg, run_dir, overrides, sweep_dir, searchpath=list(hydra_cfg.searchpath))
            exit_code = train_exit_code(record)
            interrupted = record.get("status") == "interrupted"
            if exit_code and (interrupted or not multirun):  # a signal also stops the rest of a sweep
                sys.exit(exit_code)
    except PilotError as error:  # the user can fix it: the message names key, value and fix, no traceback
        _refused(error, run_dir, multirun, overrides)
    except Exception as error:
        _failed(error, run_dir, multirun, overrides)


def _failed(error: Exception, run_dir: Path, multirun: bool, overrides: list[str]) -> None:
    """A job that raised: a refusal said as one, no space or access said naming the file, a model or task
    whose own code raised said in one line (exit 1); otherwise raised again, or in a sweep logged (its
    run.json says how it ended) while the other jobs go on."""
    if (said := user_error(error)) is not None:  # a builder's refusal, wrapped by Hydra's instantiate
        _refused(said, run_dir, multirun, overrides)
        return
    said = no_space_left(error) or access_denied(error) or in_the_way(error)  # any mode: one message naming the file
    if said is not None and not multirun:
        print(f"pilot: {as_recorded(str(said), Path(run_dir))}", file=sys.stderr)
        sys.exit(said.exit_code)
    if out_of_memory(error):  # recorded oom (run_ending): said in one paragraph, no traceback
        said_oom = f"out of memory: {out_of_memory_line(error)}{recorded_as(Path(run_dir))}"
        if multirun:
            log.error("job %s ran %s", run_dir, said_oom)
            return
        print(f"pilot: the run ran {said_oom}. {OUT_OF_MEMORY_FIX}", file=sys.stderr)
        sys.exit(1)
    kept = Path(run_dir) / ERROR_FILE  # the failed run's whole traceback, kept beside its record
    if not multirun and instantiation_failed(error):  # the model's or task's own code: one line
        log.error("pilot: %s%s", built_with_error(error), f"; the whole traceback: {kept}" if kept.is_file() else "")
        sys.exit(1)
    if not multirun and kept.is_file():  # the run's own code raised, recorded failed: one line, as a sweep job's
        log.error("pilot: the run failed: %s; the whole traceback: %s", in_one_line(error), kept)
        sys.exit(1)
    if not multirun:
        raise error
    if said is not None:  # a full disk, a denied file, a file in the way: the message of a single run, the job's fix
        log.error("job %s failed: %s", run_dir, for_one_job(str(said), job_command(Path(run_dir), overrides)))
        return
    log.error(
        "job %s ended with %s: %s%s", run_dir, type(error).__name__, error, f" ({kept})" if kept.is_file() else ""
    )


def _refused(error: PilotError, run_dir: Path, multirun: bool, overrides: list[str] = ()) -> None:
    if multirun and isinstance(error, RunFinished):  # a relaunch into a fixed subdir: the job's result, as it
        close_job_log(run_dir)  # ended (ok, diverged, a pilot's fail); said on the console only, the job's
        if error.exit_code == 0:  # directory left to the byte (submitit logs after this)
            print(
                f"pilot: job {run_dir} already finished ok in its directory: kept as this job's result, nothing was done"
            )
        else:  # not refused: the first launch ended as this (a diverged job, a failed pilot) and exited 0
            print(f"pilot: job {run_dir} kept as this job's result: {error}", file=sys.stderr)
        return
    if not multirun:
        print(f"pilot: {error}", file=sys.stderr)
        after_refusal(run_dir)  # nothing of this line left: a directory made for it, Hydra's rewritten files
        sys.exit(error.exit_code)
    print(f"pilot: {for_one_job(str(error), job_command(run_dir, overrides))}", file=sys.stderr)
    if isinstance(error, DiskFull):  # the job began and is recorded failed (disk_full): the sweep exits 1
        log.error("job %s failed: no space left; once there is, %s", run_dir, job_command(run_dir, overrides))
        return
    if recorded_failed_by(error, run_dir):  # a check after the record opened: a failed run (the recap counts it)
        log.error("job %s failed: %s", run_dir, error)
        return
    log.error("job %s refused: %s", run_dir, error)
    note_refused_job(run_dir)


def _leave_run_directory_to_rank_zero() -> None:
    """torchrun starts one Hydra app per rank; only rank 0 may create the run directory."""
    if int(os.environ.get("RANK", "0")) > 0:
        sys.argv += ["hydra.run.dir=.", "hydra.output_subdir=null", "hydra/job_logging=stdout"]


def cli() -> None:
    """``python -m pilot`` and the ``pilot`` script: Hydra's refusals of the command line (unknown key,
    wrong type, unknown option) exit 2, like every other error the user can fix."""
    global _composed
    _composed = False  # tests call it several times in one process
    recap_not_written()  # nor has this line's sweep failed to write its recap yet
    failed_jobs()  # nor has any of its jobs failed
    refused_jobs()  # nor been refused
    never_started_jobs()  # nor left a declared job without a directory
    for line in repeated_keys(sys.argv[1:]) + separated_numbers(sys.argv[1:]):
        print(f"pilot: warning: {line}", file=sys.stderr)
    refuse_added_twice(sys.argv[1:])
    refuse_unusable(sys.argv[1:], CONF_DIR, os.environ)
    refuse_unreadable_flags(sys.argv[1:])
    if removed := [line for line in _removals(sys.argv[1:]) if line.startswith("~")]:
        print("\n".join(f"pilot: {line}" for line in removed), file=sys.stderr)  # Hydra's KeyError, before
        raise SystemExit(2)
    # Hydra raises what fails in its own code (writing .hydra/ on a full disk) instead of printing a
    # traceback: pilot says it (``_hydra_failed``); a user's own HYDRA_FULL_ERROR keeps Hydra's way
    says_hydra_errors = "HYDRA_FULL_ERROR" not in os.environ
    if says_hydra_errors:
        os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        main()
        if (name := passed_on_to_jobs()) is not None:  # every job ended before the signal reached it
            raise SystemExit(128 + int(getattr(signal, name)))
        sweep_ending()
    except SystemExit as stop:
        if stop.code == 1 and not _composed and not isinstance(stop, (RunDirectoryRefused, SweepIncomplete)):
            _suggest_and_refuse()
        if stop.code == 2 and launch_config() is not None:  # the sweeper refused a batch: what ran is recapped,
            launched = getattr(stop, "jobs_launched", None) != 0  # else multirun.yaml is put back as it was
            recap_interrupted_launch("refused before its jobs ran", launched=launched)
        if stop.code == 2:  # refused: a sweep directory made for this line, still empty, goes
            settle_refused_sweeps()
        if isinstance(stop.code, int) and stop.code >= 128 and launch_config() is not None:
            # a signal stopped a sweep's job in this process (one that came while its record was written
            # included): said as when it comes between two jobs, then the recap of what the launch made
            recap_after_signal(signal_of_exit_code(stop.code))
        raise
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or SIGHUP outside a run's own watch
        if launch_config() is None:
            _interrupted_outside_a_run(signal_name_of(stop))
        sweep_interrupted(signal_name_of(stop))
    except Exception as error:
        if launch_config() is not None and type(error).__name__ in SUBMITIT_JOB_ERRORS:
            sweep_job_without_result(error)
        if not says_hydra_errors:
            raise
        _hydra_failed(error)
    finally:
        if says_hydra_errors:
            os.environ.pop("HYDRA_FULL_ERROR", None)


def _interrupted_outside_a_run(name: str) -> None:
    """A signal while Hydra composed the config or wrote ``.hydra/`` (before the run watched signals),
    or after the run's record was written: one line and 128 + the signal's number, no traceback. A
    directory made for this line goes, and a run's ``.hydra/`` files Hydra rewrote are put back
    (``after_refusal``), unless the run wrote its record."""
    unsettled = unsettled_run_directories()
    for run_dir in unsettled:
        after_refusal(run_dir)
    recorded = [run_dir / "run.json" for run_dir in unsettled if _written_by_this_line(run_dir)]
    said = (
        f"how the run ended: {recorded[0]}"
        if recorded
        else "before this command's run started; nothing was recorded or changed"
    )
    print(f"pilot: interrupted ({name}) {said}", file=sys.stderr)
    raise SystemExit(128 + int(getattr(signal, name))) from None


def _written_by_this_line(run_dir: Path) -> bool:
    record = run_dir / "run.json"
    return record.is_file() and record.stat().st_mtime >= _STARTED


def _hydra_failed(error: Exception) -> None:
    """What Hydra raised after pilot's run directory check: a full disk is one message; a config
    Hydra refuses (an interpolation of nothing) is its message and what was meant (exit 2); either
    way the directory made for this line goes (``after_refusal``). Anything else is a bug: raised."""
    full = no_space_left(error, hydra_was_writing())
    if full is None and not isinstance(error, (CompactHydraException, OmegaConfBaseException)):
        raise error
    instantiation = _composed and type(error).__name__ == "InstantiationException"  # a builder failed, not the line
    said = [] if full is not None or instantiation else suggestions(CONF_DIR, sys.argv[1:], key_outside_the_yaml)
    if full is not None:
        print(f"pilot: {full}", file=sys.stderr)
    elif not names_hydras_key(said, str(error)):  # else Hydra's advice (+optim.lrr=1 for a typo) is left out
        print(error, file=sys.stderr)  # as Hydra prints it: the message (its key), then OmegaConf's cause
        if isinstance(error.__cause__, OmegaConfBaseException):
            print(without_node_details(str(error.__cause__)), file=sys.stderr)
    if full is not None and launch_config() is not None:  # a sweep: its jobs' .hydra/ or its multirun.yaml
        settle_failed_sweep()
    for run_dir in unsettled_run_directories():
        if not after_refusal(run_dir):
            print(
                f"pilot: {run_dir / '.hydra'} could not be put back as it was (no room): it says "
                f"this command's config; the run's own is {run_dir / 'config.yaml'}",
                file=sys.stderr,
            )
    if full is not None:
        raise SystemExit(full.exit_code) from None
    if instantiation:
        raise SystemExit(1) from None
    _suggest_and_refuse(said)


def _removals(arguments: list[str]) -> list[str]:
    """What is wrong with each ``~key`` of the line (composed only when the line has one)."""
    if not any(a.startswith("~") and not a.startswith("~hydra") for a in arguments):
        return []
    return suggestions(CONF_DIR, arguments, key_outside_the_yaml)


def _suggest_and_refuse(said: list[str] | None = None) -> None:
    if said is None:
        said = suggestions(CONF_DIR, sys.argv[1:], key_outside_the_yaml)
    for line in said:  # after Hydra's message, unless they say what it did
        print(f"pilot: {line}", file=sys.stderr)
    settle_refused_sweeps()  # a sweep directory made for this line, holding only multirun.yaml, goes
    raise SystemExit(2) from None


def script() -> None:
    """The ``pilot`` script and ``python -m pilot``: ``cli``, then the process ends without tearing
    its modules down (about 1 s saved per process, ``pilot.process_exit``)."""
    sys.argv = flags_first(sys.argv)
    try:
        refuse_unusable(sys.argv[1:], CONF_DIR, os.environ)  # RANK=abc: before the rank is read
    except SystemExit as stop:
        exit_now(exit_code_of(stop))
    _leave_run_directory_to_rank_zero()
    logging.raiseExceptions = False  # a log line that does not fit (a full disk) is dropped, not a traceback:
    # pilot's own message names the file that did not fit
    raise_from_now_on()  # from here, a signal is handled where it lands (a run records it)
    try:
        cli()
    except SystemExit as stop:
        exit_now(exit_code_of(stop))
    exit_now(0)


if __name__ == "__main__":
    script()
