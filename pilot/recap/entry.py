"""The two ways a recap starts: ``python -m pilot.recap`` and the Hydra callback at the end of a multirun."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pilot.recap as recap  # its readers and writers through the package: loaded on first use (pandas)
from pilot.errors import PilotError
from pilot.recap.command_line import recap_arguments
from pilot.recap.earlier_launch import copy_earlier_multirun_yaml, keep_earlier_recap, times_of
from pilot.rental.journal import append_entry, journal_problem
from pilot.run_directory import settle_refused_sweeps
from pilot.run_record import new_run_id
from pilot.startup_signals import raise_from_now_on, signal_name_of

if TYPE_CHECKING:
    import pandas as pd

try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency; keeps the module importable alone
    Callback = object


class RecapCallback(Callback):
    """Hydra callback: when a multirun ends, recap the runs it made, in its sweep directory.

    Only this launch's runs: run directories already in the sweep directory when the
    multirun started (a reused ``hydra.sweep.dir``) are left out, and recap.md says how
    many — except those that hold a job of this launch for which it made no new directory
    (a fixed ``hydra.sweep.subdir``: the job resumed or was found finished there). The runs it made are grouped by their run.json ``sweep_id``, so launches into
    one directory at the same time are still judged apart, never pooled.
    """

    def __init__(self) -> None:
        self.earlier_runs: frozenset[Path] = frozenset()

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        # one id for every job of this launch, recorded as run.json's sweep_id (run_record.py):
        # jobs in this process, in submitit's local processes and in SLURM jobs inherit it
        os.environ["PILOT_SWEEP_ID"] = new_run_id()
        sweep_dir = Path(config.hydra.sweep.dir)
        self.earlier_runs = frozenset(recap.find_run_dirs([sweep_dir])) if sweep_dir.is_dir() else frozenset()
        _launch.clear()
        earlier_yaml = sweep_dir / "multirun.yaml"  # Hydra rewrites it next: put back if every job is refused
        _launch.update(
            config=config,
            earlier_runs=self.earlier_runs,
            multirun_yaml=earlier_yaml.read_bytes() if earlier_yaml.is_file() else None,
            multirun_yaml_times=times_of(earlier_yaml),
        )
        _launch["multirun_yaml_copy"] = copy_earlier_multirun_yaml(
            sweep_dir, _launch["multirun_yaml"], _launch["multirun_yaml_times"]
        )

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        recap_launch(config, self.earlier_runs)
        _launch.clear()


_launch: dict[str, Any] = {}  # the multirun this process launched, until its recap is written


_not_written: list[Path] = []  # sweeps whose recap could not be written (the process exits 1)
_failed: list[str] = []  # run directories of this process's launches that ended failed (it exits 1)
_refused: list[str] = []  # run directories of this process's launches whose job was refused (it exits 2)


_never_started: list[str] = []  # "Never started" lines of this process's launches' recaps (it exits 1)
_not_passed: list[str] = []  # pilots whose verdict gates and estimates refused, of this process's launches (exit 1)


def pilots_not_passed() -> list[str]:
    """The pilots of the sweeps this process launched whose verdict gates (status failed or oom) or that were
    killed before it (still running once their launch ended), and the estimates refused, each "run_dir (mode:
    why)", since the last call (each call starts the count again)."""
    said = list(_not_passed)
    _not_passed.clear()
    return said


def never_started_jobs() -> list[str]:
    """The recaps' lines naming jobs a launch declared that left no run directory (refused or lost in
    another process: local_parallel, SLURM) since the last call (each call starts the count again)."""
    lines = list(_never_started)
    _never_started.clear()
    return lines


def note_refused_job(run_dir: Path | str) -> None:
    """A job of the launch this process runs was refused at run time (nothing done in its directory)."""
    _refused.append(str(run_dir))


def refused_jobs() -> list[str]:
    """The jobs refused since the last call (each call starts the count again)."""
    refused = list(_refused)
    _refused.clear()
    return refused


def failed_jobs() -> list[str]:
    """The jobs of the sweeps this process launched that ended ``failed`` (an error, a full disk: not a
    training outcome such as diverged) or left no readable record (a crash before it wrote one) since the
    last call (each call starts the count again)."""
    failed = list(_failed)
    _failed.clear()
    return failed


def recap_not_written() -> bool:
    """Whether a sweep this process launched ended without the recap it promised (a full disk) since
    the last call (each call starts the count again)."""
    missing = bool(_not_written)
    _not_written.clear()
    return missing


def launch_config() -> Any:
    """The config (Hydra's node included) of the multirun this process launched and has not recapped
    yet, or None."""
    return _launch.get("config")


def recap_interrupted_launch(ended: str, launched: bool = True) -> pd.DataFrame | None:
    """A multirun stopped before its end (its jobs recorded how each ended): the recap of what it made;
    ``ended`` says how, in the journal's entry ("interrupted (SIGTERM)"); ``launched=False``: refused before
    any job of it ran, so no earlier run in its jobs' directories is one of its jobs."""
    if not _launch:
        return None
    sweep_dir = Path(_launch["config"].hydra.sweep.dir)
    earlier = set(_launch["earlier_runs"])
    if sweep_dir.is_dir() and launched:  # an earlier run this launch continued or found finished (a fixed subdir)
        earlier -= set(recap.earlier_job_results(sweep_dir, frozenset(earlier)))
    if not (set(recap.find_run_dirs([sweep_dir])) - earlier) if sweep_dir.is_dir() else True:
        _put_back_multirun_yaml(sweep_dir)
        _launch.clear()  # stopped before any job made a directory (the sweep's checks): nothing to recap
        settle_refused_sweeps()  # a sweep directory this line made, holding only multirun.yaml, goes
        left = f"{sweep_dir} as before the command" if sweep_dir.exists() else f"{sweep_dir}, made for it, removed"
        print(f"recap: no job of this launch had begun: nothing to recap ({left})")
        return None
    frame = recap_launch(_launch["config"], _launch["earlier_runs"], ended)
    _launch.clear()
    return frame


def recap_launch(config: Any, earlier_runs: frozenset[Path], ended: str = "concluded") -> pd.DataFrame | None:
    """recap.md/.csv/.png of the runs a launch made in its sweep directory (``earlier_runs`` left out),
    and the campaign journal's entry when one is kept, titled "sweep <ended>"."""
    sweep_dir = Path(config.hydra.sweep.dir)
    campaign = config.get("campaign", {}) or {}
    control = str(campaign.get("control", "") or "")
    if not sweep_dir.is_dir():
        print(f"recap: no sweep directory {sweep_dir}: no job wrote anything, nothing to recap")
        return None
    try:  # an earlier run that is a job of this launch (a fixed subdir: resumed, or found finished) is in
        held = recap.earlier_job_results(sweep_dir, earlier_runs)
        skip = earlier_runs - held
        launch_id = os.environ.get("PILOT_SWEEP_ID")
        others = recap.other_launches_runs(sweep_dir, earlier_runs, launch_id)
        skip |= others
        if _refused and set(recap.find_run_dirs([sweep_dir])) <= set(skip):
            _put_back_multirun_yaml(sweep_dir)
            print(f"recap: every job of this launch was refused, none ran: {sweep_dir} is left as it was")
            return None
        _keep_earlier_multirun_yaml(sweep_dir, keep_earlier_recap(sweep_dir))
        frame = recap.build_recap(
            [sweep_dir],
            sweep_dir,
            control,
            quality_tolerance=campaign.get("quality_tolerance"),
            skip=skip,
            started_elsewhere=others,
            launch=(launch_id, held) if launch_id else None,
        )
    except PilotError as error:  # the sweep's runs are done and kept; only the recap could not be written
        print(f"recap: {error}", file=sys.stderr)
        _not_written.append(sweep_dir)
        return None
    print(f"recap: {len(frame)} run(s) -> {sweep_dir / 'recap.md'}")
    _say_unreadable(frame)
    _never_started.extend(line for line in frame.attrs.get("conclusions", []) if str(line).startswith("Never started"))
    if "status" in frame:
        # a job that left no readable record (it crashed before writing one) did not run either
        _failed.extend(str(d) for d in frame.loc[frame["status"].isin(("failed", "unreadable")), "run_dir"])
    apart = frame.attrs.get(recap.PILOTS_AND_ESTIMATES, [])
    if apart:
        print(f"recap: and {len(apart)} pilot(s) or estimate(s), listed at the end of recap.md")
    # a pilot whose verdict gates (fail, oom, incomplete) or an estimate refused: as its own command would, the
    # sweep exits non-zero (it exited 0, its recap saying "0 run(s)")
    _not_passed.extend(
        f"{row['run_dir']} ({row.get('mode')}: {row.get('stop_cause') or row.get('status')})"
        for row in apart
        if row.get("status") in ("failed", "oom", "running")  # running once its launch ended: killed, no verdict
    )
    if campaign.get("journal"):
        journal = Path(campaign.get("journal"))
        try:
            append_entry(journal, f"sweep {ended} ({sweep_dir})", _journal_lines(frame, sweep_dir))
        except OSError as error:  # the recap itself is written: say what the journal lacks
            print(f"recap: {journal_problem(campaign.get('journal'), error)}", file=sys.stderr)
    return frame


def _drop_multirun_yaml_copy() -> None:
    """This launch's copy of the earlier multirun.yaml, where nothing needs it (put back, or the same)."""
    if (copy := _launch.pop("multirun_yaml_copy", None)) is not None:
        with contextlib.suppress(OSError):
            copy.unlink()


def _put_back_multirun_yaml(sweep_dir: Path) -> None:
    """The earlier launch's multirun.yaml, which Hydra rewrote at this launch's start, as it was (a launch
    that ran no job leaves the sweep directory as it found it)."""
    if (earlier_yaml := _launch.get("multirun_yaml")) is not None and sweep_dir.is_dir():
        (sweep_dir / "multirun.yaml").write_bytes(earlier_yaml)
        _drop_multirun_yaml_copy()
        if (times := _launch.get("multirun_yaml_times")) is not None:  # its times too: as it was, to the second
            with contextlib.suppress(OSError):
                os.utime(sweep_dir / "multirun.yaml", ns=times)


def _keep_earlier_multirun_yaml(sweep_dir: Path, stamp: str | None) -> None:
    """The earlier launch's multirun.yaml (its sweep's definition), which Hydra rewrote at this launch's start,
    kept beside its recap as multirun-<its recap's time>.yaml (the time now when it left no recap)."""
    earlier = _launch.get("multirun_yaml")
    now = sweep_dir / "multirun.yaml"
    if earlier is None or (now.is_file() and now.read_bytes() == earlier):
        _drop_multirun_yaml_copy()
        return
    if (copy := _launch.get("multirun_yaml_copy")) is not None and copy.is_file():
        print(f"recap: the earlier launch's multirun.yaml there is kept as {copy}")
        return
    kept = sweep_dir / f"multirun-{stamp or time.strftime('%Y%m%d-%H%M%S')}.yaml"
    try:
        if not kept.exists():
            kept.write_bytes(earlier)
            print(f"recap: the earlier launch's multirun.yaml there is kept as {kept}")
    except OSError as error:  # a notebook of the sweep's definition: its loss never stops the recap
        print(f"recap: could not keep the earlier multirun.yaml as {kept}: {error.strerror or error}", file=sys.stderr)


def _say_unreadable(frame: pd.DataFrame) -> None:
    """Each run directory whose record could not be read, on the console too (it was in the tables only)."""
    if "status" not in frame:
        return
    for _, row in frame[frame["status"] == "unreadable"].head(5).iterrows():
        print(f"recap: {row.get('run_dir')}: unreadable ({row.get('stop_cause')})", file=sys.stderr)
    if (more := int((frame["status"] == "unreadable").sum()) - 5) > 0:
        print(f"recap: {more} more unreadable run directories (recap.csv lists them)", file=sys.stderr)


def _journal_lines(frame: pd.DataFrame, sweep_dir: Path) -> list[str]:
    """The sweep's entry in the campaign journal: run counts per status, the verdicts, where the recap is."""
    counts = ", ".join(f"{k} {v}" for k, v in sorted(frame["status"].value_counts().to_dict().items()))
    return [
        f"- {len(frame)} run(s): {counts or 'none'}",
        *[f"- {line}" for line in frame.attrs.get("conclusions", [])],
        f"- recap: {sweep_dir / 'recap.md'}",
    ]


def _refuse_a_pilots_own_directory(paths: list[Path]) -> None:
    """The one directory given (no --out) is a pilot's or a mode=estimate's own (its run.json says so):
    refused, exit 2, before anything is written into it."""
    try:
        mode = json.loads((Path(paths[0]) / "run.json").read_text()).get("mode") if len(paths) == 1 else None
    except (OSError, ValueError, AttributeError):
        return
    if (kind := {"pilot": "pilot", "estimate": "mode=estimate"}.get(mode)) is None:
        return
    print(
        f"pilot.recap: {paths[0]} is a {kind}'s run directory: its recap would be written into it, beside its "
        "report, and compare no training run; nothing was written. Fix: --out DIR (the recap lists it there), or "
        "recap a sweep directory, a run root or a training run's directory",
        file=sys.stderr,
    )
    sys.exit(2)


def _control_and_tolerance(args) -> tuple[str | None, float | None]:
    """--control and --quality-tolerance, each as the sweep's launch declared it where not given (its
    multirun.yaml), said when taken from there."""
    control, tolerance = args.control, args.quality_tolerance
    if not control or tolerance is None:
        declared, declared_tolerance, where = recap.declared_campaign(args.paths)
        if where and not declared and declared_tolerance is None:
            print(f"recap: {where}")
        elif where:
            taken = [f"campaign.control={declared!r}"] if declared and not control else []
            taken += (
                [f"quality_tolerance={declared_tolerance}"]
                if declared_tolerance is not None and tolerance is None
                else []
            )
            control, tolerance = control or declared, declared_tolerance if tolerance is None else tolerance
            if taken:
                print(
                    f"recap: {', '.join(taken)} as declared in {where} (--control and --quality-tolerance set others)"
                )
    return control, tolerance


def main(argv: list[str] | None = None) -> None:
    args = recap_arguments(argv)
    out = args.out or args.paths[0]
    if args.out is None:
        _refuse_a_pilots_own_directory(args.paths)
    raise_from_now_on()  # SIGINT, SIGTERM, SIGHUP: one line below, the earlier recap kept
    try:  # from here on: a signal while pandas loads (the declared campaign's reader) is that one line too
        control, tolerance = _control_and_tolerance(args)
        if [os.path.abspath(p) for p in args.paths] != [os.path.abspath(out)]:  # a recap of other runs than
            keep_earlier_recap(out)  # the directory's own (some jobs, --out a sweep): the one there is kept
        frame = recap.build_recap(
            args.paths,
            out,
            control,
            plot=not args.no_plot,
            quality_tolerance=tolerance,
            pool=args.pool,
            control_must_match=True,
        )
    except PilotError as error:  # the user can fix it: the message, no traceback
        print(f"pilot.recap: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt as stop:
        name = signal_name_of(stop)
        print(
            f"pilot.recap: interrupted ({name}); nothing was written (an earlier recap there, if any, is left as it was)",
            file=sys.stderr,
        )
        sys.exit(128 + int(getattr(signal, name)))
    print(f"recap: {len(frame)} run(s) -> {out / 'recap.md'}")
    _say_unreadable(frame)
    if len(frame) and "status" in frame and bool((frame["status"] == "unreadable").all()):
        print(
            f"pilot.recap: none of the {len(frame)} run(s) could be read, so the recap compares nothing (exit 1; "
            "recap.md and recap.csv say why each is unreadable). Fix: restore the file each one names (its run.json "
            "or metrics.jsonl), or recap other runs",
            file=sys.stderr,
        )
        sys.exit(1)
