"""What a run directory may hold before a run writes into it, checked before Hydra writes there.

Hydra creates ``hydra.run.dir`` and writes ``.hydra/`` (config, overrides) into it before the
task starts; a check in the task comes too late: a finished run's ``.hydra/config.yaml`` would
already say a config it never used. ``RunDirectoryCheck`` (a Hydra callback, conf/config.yaml)
checks first, in ``on_run_start``:

- ``hydra.run.dir`` empty: refused (the run would write into the current directory);
- a file in the way, or a directory that cannot be written: refused, naming the key;
- a directory holding a run (``run.json``): a training run's may be continued, a finished one is
  reported and left as it is (``pilot.finished_runs.refuse_finished_run``); no other is reused;
- a directory holding anything else than Hydra's own ``.hydra/`` and log, or pilot's lock file:
  refused: pilot would overwrite or append to the user's files (config.yaml, metrics.jsonl).

A refusal prints ``pilot: <message>`` and exits with the error's code before anything is
written. For a refusal that comes later (a config pilot's validation refuses, a resume refused),
``after_refusal`` removes the run directory when this process created it and it holds only
Hydra's files, so a refused command line leaves no directory a recap would count as a run; in a
directory holding a run it puts back the files Hydra rewrote for the refused line (``pilot.hydra_files``),
as ``on_multirun_end`` does for a sweep's jobs found finished in a fixed ``hydra.sweep.subdir``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pilot.config.hydra_keys import refuse_added_hydra_keys, refuse_escaping_output_subdir, refuse_unknown_launcher_keys
from pilot.config.values import enum_value
from pilot.directory_keys import (
    directory_of,
    made_from_root,
    refuse_changed_directory,
    refuse_inside_a_run,
    refuse_long_names,
    refuse_unwritable_launcher_folder,
    writable_directory,
)
from pilot.errors import PilotError, ResumeRefused, RunFinished
from pilot.faults import fault_point
from pilot.finished_runs import refuse_finished_run, refuse_reused_for
from pilot.hydra_files import HydraFiles, another_apps_hydra, jobs_files_before, output_subdir, remember_job_files
from pilot.run_record import WHEN_TAKEN, RunDirectoryLock

HYDRA_OWN = (".hydra", RunDirectoryLock.NAME)  # with Hydra's job log: not the user's files
JOB_LOG = "__main__.log"  # Hydra's log of a pilot job (hydra.job.name is the module's, __main__)
_RECORD_STAGED = re.compile(r"^\.run\.json\.\d+\.tmp$")  # run.json being written when a signal came
_STARTED = time.time()


def _pilots_own(path: Path, name: str, job_log: str = JOB_LOG) -> bool:
    """A file of a directory without a run record that Hydra or pilot wrote, never the user's: Hydra's
    job log (this line's name, or any log written since this process started) and a run.json staged by
    an attempt stopped while writing it. A user's ``notes.log`` from before is theirs."""
    if name in (job_log, JOB_LOG) or _RECORD_STAGED.match(name):
        return True
    if not name.endswith(".log"):
        return False
    try:
        return (path / name).stat().st_mtime >= _STARTED - 1.0
    except OSError:
        return False


_created: dict[str, str | None] = {}  # run directories this process created, with their hydra.output_subdir
_hydra_before: dict[str, HydraFiles] = {}  # a run's Hydra files (and run.json) as they were, by absolute path
_created_sweeps: set[str] = set()  # sweep directories this process created (``settle_refused_sweeps``)
_new_parents: dict[str, list[str]] = {}  # a created directory -> the folders above it made with it
_sweep_dirs: list[str] = []  # sweep directories this process checked (what Hydra failed writing)


class RunDirectoryRefused(SystemExit):
    """A refusal from the check (Hydra turns a callback's exception into a warning; an exit stays one)."""


class RunDirectoryCheck(Callback):
    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        if int(os.environ.get("RANK", "0")) > 0:  # torchrun's other ranks write nothing (pilot.__main__)
            return
        for check in (refuse_changed_directory, refuse_added_hydra_keys, refuse_escaping_output_subdir):
            _refused_exits(check, config)
        _refused_exits(check_run_directory, config)
        fault_point("hydra_files")  # tests: a signal while Hydra writes .hydra/, before the run

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        """Hydra's files as this line's Hydra wrote them (made from its config, not read back): put back once the
        run holds its directory, should a line started at once have rewritten or mixed them before its refusal."""
        if int(os.environ.get("RANK", "0")) == 0:
            with contextlib.suppress(OSError, OmegaConfBaseException):
                run_dir = Path(str(config.hydra.runtime.output_dir))
                _own_hydra[os.path.abspath(run_dir)] = HydraFiles.as_written(run_dir, _output_subdir(config), config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        for check in (refuse_changed_directory, refuse_added_hydra_keys, refuse_escaping_output_subdir):
            _refused_exits(check, config)
        _refused_exits(refuse_unknown_launcher_keys, config)  # before the launcher makes anything
        _refused_exits(_check_sweep_directory, config)
        _refused_exits(refuse_unwritable_launcher_folder, config)  # inside the sweep directory by default
        _sweep_dirs.append(os.path.abspath(config.hydra.sweep.dir))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        for path, before in jobs_files_before().items():  # a job found finished: its run.json as it was
            with contextlib.suppress(PilotError, OSError), RunDirectoryLock(Path(path), says_holder=False):
                before.put_back(Path(path))


_own_hydra: dict[str, HydraFiles] = {}  # run directory -> this process's Hydra files, as written


def _keep_own_hydra_files(run_dir: Path) -> None:
    """When this process takes ``run_dir`` and before it lets it go: its Hydra files as its own Hydra wrote
    them (a line refused there meanwhile, its Hydra started before it was refused, may have rewritten them
    with a config this run never used)."""
    own = _own_hydra.get(os.path.abspath(run_dir))
    if own is not None and own.files:
        with contextlib.suppress(OSError):
            own.put_back(Path(run_dir), may_have_run=False)


WHEN_TAKEN.append(_keep_own_hydra_files)


def _check_sweep_directory(config: DictConfig) -> None:
    """A sweep writes its jobs' directories (new names), ``multirun.yaml`` and ``recap.*`` there: a
    directory holding a run, or files under those names that pilot did not write, is refused."""
    path = directory_of(config, "hydra.sweep.dir")
    root = made_from_root(config, "hydra.sweep.dir", "campaign.sweep_root")  # a root the user set is named first
    refuse_long_names("hydra.sweep.dir", str(path))
    if not (path / "run.json").exists():  # itself a run's directory: said below
        refuse_inside_a_run("hydra.sweep.dir", path, root)
    if not path.exists():
        _created_sweeps.add(os.path.abspath(path))
        _note_new_parents(path)
    writable_directory(path, "hydra.sweep.dir", root)
    if (path / "run.json").exists():
        raise ResumeRefused(
            f"hydra.sweep.dir={path} holds a run (run.json): a sweep would write its jobs, multirun.yaml and "
            "its recap into that run's directory. Fix: name a new or empty directory, or leave hydra.sweep.dir "
            "out (a new directory under campaign.sweep_root)."
        )
    foreign = not_written_by_pilot(path)  # its other files are never touched: jobs get new directories
    if foreign:
        raise ResumeRefused(
            f"hydra.sweep.dir={path} holds files a sweep did not write ({', '.join(sorted(foreign)[:5])}): the "
            "sweep would overwrite multirun.yaml and recap.* there. Fix: name a new or empty directory (or one an "
            "earlier pilot sweep wrote), or leave hydra.sweep.dir out."
        )


def not_written_by_pilot(path: Path) -> list[str]:
    """Files under a sweep's or recap's own names in ``path`` that pilot did not write: Hydra's
    multirun.yaml holds a ``hydra:`` section; pilot's recap.md starts with ``# Recap`` (recap.csv
    and recap.png go with it: a user's recap.md makes them suspect too). The campaign journal is only
    ever appended to: any journal.md may stay."""
    found = []
    checks = {
        "multirun.yaml": lambda text: any(line.startswith("hydra:") for line in text.splitlines()),
        "recap.md": lambda text: text.startswith("# Recap"),
        "recap.csv": lambda text: text.startswith("run_dir,"),
    }
    for name, ours in checks.items():
        file = path / name
        if file.is_file():
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    head = handle.read(65536)
            except OSError:
                continue
            if not ours(head):
                found.append(name)
    if "recap.md" in found and (path / "recap.png").is_file():
        found.append("recap.png")
    return found


def _note_new_parents(path: Path) -> None:
    """The folders above ``path`` that do not exist yet (``outputs/<date>/`` for a day's first run): made
    for this line, they go with its directory when it is refused (``_remove_with_new_parents``)."""
    absolute = Path(os.path.abspath(path))
    _new_parents[str(absolute)] = [str(p) for p in absolute.parents if not p.exists()]


def _remove_with_new_parents(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    for parent in _new_parents.pop(path, []):  # the nearest first; os.rmdir leaves one that holds anything
        with contextlib.suppress(OSError):
            os.rmdir(parent)


def settle_refused_sweeps() -> None:
    """After a sweep refused before any job ran (a job pilot would refuse, a sweep over no value):
    the sweep directory this process created for it goes, when it holds at most Hydra's multirun.yaml."""
    for path in sorted(_created_sweeps):
        with contextlib.suppress(OSError):
            if set(os.listdir(path)) <= {"multirun.yaml"}:
                _remove_with_new_parents(path)
    _created_sweeps.clear()


def _refused_exits(check, config: DictConfig) -> None:
    try:
        check(config)
    except PilotError as error:
        print(f"pilot: {error}", file=sys.stderr)
        raise RunDirectoryRefused(error.exit_code) from None


def check_run_directory(config: DictConfig) -> None:
    """Refuse (``PilotError``) a ``hydra.run.dir`` a run may not write into; see the module's text."""
    path = directory_of(config, "hydra.run.dir")
    root = made_from_root(config, "hydra.run.dir", "campaign.run_root")  # a root the user set is named first
    refuse_long_names("hydra.run.dir", str(path))
    if not path.exists():
        _created[os.path.abspath(path)] = _output_subdir(config)
        _note_new_parents(path)
    if (path / "run.json").exists():  # first: a finished run on a read-only disk is reported as finished
        with contextlib.suppress(OmegaConfBaseException):  # a setting that does not resolve: the validation
            try:  # refuses the line naming it, and the .hydra/ Hydra rewrote is put back
                _refuse_reused(config, path)
            except PilotError:  # what the run there says comes after the line's own bad settings (exit 2)
                _check_config_first(config)
                raise
        base = Path(os.path.abspath(path))  # after_refusal looks it up by the absolute path
        _hydra_before[str(base)] = HydraFiles.before_hydra(base, _output_subdir(config))
        writable_directory(path, "hydra.run.dir")
        return
    refuse_inside_a_run("hydra.run.dir", path, root)
    writable_directory(path, "hydra.run.dir", root)
    _refuse_foreign(config, path)


CONFIG_CHECKS: list[Callable[[DictConfig], None]] = []  # pilot.validation's, on Hydra's whole config


def _check_config_first(config: DictConfig) -> None:
    """The line's settings checked as in a new directory (``CONFIG_CHECKS``): a bad value beside a finished
    run's directory was answered "finished, nothing was done" with exit 0, a missing data file "another
    config". A check that cannot run here (the task's own code raising) leaves the answer to the run."""
    for check in CONFIG_CHECKS:
        try:
            check(config)
        except PilotError:
            raise
        except Exception:  # noqa: BLE001 - said by the run itself, as in a new directory
            return


def job_directory_problem(config: DictConfig, path: Path) -> str | None:
    """What ``check_run_directory`` would refuse in a sweep job's directory that exists before the
    launch (a fixed ``hydra.sweep.subdir``), found without writing anything, or None. The sweeper asks
    it of every job before any runs: a job in its own process (local_parallel, SLURM) is refused where
    the launching process never hears of it. A job that would resume, or is found finished, is none."""
    if not path.is_dir():
        return None
    remember_job_files(path, _output_subdir(config))  # put back after the launch if the job did not run
    try:
        if (path / "run.json").exists():
            _refuse_reused(config, path)
        else:
            _refuse_foreign(config, path)
    except RunFinished:  # kept as the job's result (ok) or left as it ended (diverged): the job says so
        return None
    except PilotError as error:
        return f"{error} In a sweep the fix is a hydra.sweep.subdir naming new directories (the default does), or a new hydra.sweep.dir."
    return None


def _refuse_foreign(config: DictConfig, path: Path) -> None:
    """A directory without a run record holding files pilot did not write: refused (``ResumeRefused``)."""
    subdir = _output_subdir(config)  # where Hydra writes its files (.hydra unless the line names another)
    own = {*HYDRA_OWN, *([Path(subdir).parts[0]] if subdir else [])}
    job_log = f"{OmegaConf.select(config, 'hydra.job.name', default=None, throw_on_resolution_failure=False) or '__main__'}.log"
    foreign = sorted(p.name for p in path.iterdir() if p.name not in own and not _pilots_own(path, p.name, job_log))
    if subdir and another_apps_hydra(path / subdir, config):
        foreign.insert(0, f"{subdir}/ of another Hydra app (its config.yaml has no pilot settings)")
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ResumeRefused(
            f"hydra.run.dir={path} holds files that are not a pilot run ({shown}; no run.json): the run "
            "would overwrite or append to them. Fix: name a new or empty directory, or leave "
            "hydra.run.dir out (a new directory under campaign.run_root)."
        )


def _output_subdir(config: DictConfig) -> str | None:
    """Where this line's Hydra writes its files in the run directory (``hydra.output_subdir``)."""
    return OmegaConf.select(config, "hydra.output_subdir", default=".hydra")


def _refuse_reused(config: DictConfig, path: Path) -> None:
    """A directory holding a run: a training run may be continued (pilot.resume), nothing else."""
    mode = enum_value(config.mode)
    if mode == "train":
        refuse_finished_run(config, path)
        return
    refuse_reused_for(mode, path, config)


def after_refusal(run_dir: Path) -> bool:
    """After a refusal: remove ``run_dir`` if this process created it and it holds only Hydra's
    files; in a directory holding a run whose run.json this line did not change (it was refused
    before it ran), put back the files Hydra rewrote for it (``.hydra/`` or the line's
    ``hydra.output_subdir``: they would say a config the run never used). Only while holding the directory's lock: a directory another process now runs
    in (it won the lock) is never touched. What cannot be done is left as it is. False: the run's
    ``.hydra/`` files could not be put back (they say this line's config)."""
    path = os.path.abspath(run_dir)
    before, created = _hydra_before.pop(path, None), path in _created
    subdir = _created.pop(path, None)
    if (before is None and not created) or not os.path.isdir(path):
        return True
    try:
        with RunDirectoryLock(Path(path), says_holder=False):  # writes nothing: works on a full disk
            if before is not None:
                before.put_back(Path(path))
            else:
                _remove_if_hydra_alone(path, subdir)
    except PilotError:  # busy: the process that holds the lock wrote its .hydra/ files before it took the
        if before is not None:  # lock, and this line's Hydra rewrote them since: they are put back as they were
            try:
                before.put_back(Path(path), may_have_run=False)
            except OSError:
                return False
        return True
    except OSError:  # the disk refuses
        return before is None
    return True


def _remove_if_hydra_alone(path: str, subdir: str | None = ".hydra") -> None:
    """Remove ``path`` if it holds only what Hydra writes (``subdir``: its files' folder, and logs) and the lock."""
    own = {*HYDRA_OWN, *([Path(subdir).parts[0]] if subdir else [])}
    if all(name in own or _pilots_own(Path(path), name) for name in os.listdir(path)):
        _remove_with_new_parents(path)


def remove_unstarted_job(run_dir: Path) -> None:
    """A sweep job stopped before its run began (a signal before its record): its directory, new by
    construction, holds only Hydra's files; it goes, so that a recap counts the job as never started
    (not as an unreadable run). A directory holding anything else, or locked by another process, stays."""
    path = os.path.abspath(run_dir)
    if not os.path.isdir(path):
        return
    with contextlib.suppress(PilotError, OSError), RunDirectoryLock(Path(path), says_holder=False):
        _remove_if_hydra_alone(path)


def hydra_was_writing() -> Path | None:
    """Where Hydra writes its own files for this process's line: the unsettled run directory's
    ``.hydra/``, else the newest job directory's ``.hydra/`` that holds no run (Hydra writes it before
    the job runs), else the sweep's multirun.yaml (written before any job)."""
    unsettled = unsettled_run_directories()
    if unsettled:
        run = unsettled[0]
        before = _hydra_before.get(str(run))
        return (before.subdir if before else output_subdir(run, _created.get(str(run)))) or run
    if not _sweep_dirs:
        return None
    jobs = _jobs_without_a_run(Path(_sweep_dirs[-1]))
    return max(jobs, key=lambda job: job.stat().st_mtime) / ".hydra" if jobs else Path(_sweep_dirs[-1], "multirun.yaml")


def _jobs_without_a_run(sweep: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return [d for d in sweep.iterdir() if d.is_dir() and (d / ".hydra").is_dir() and not (d / "run.json").exists()]
    return []


def remove_unstarted_jobs() -> None:
    """The directories of this line's sweep whose job never began (Hydra wrote them, then a full disk or a
    signal stopped it) go when they hold only Hydra's files: a recap counted each as an unreadable run and
    as a job never started. Only for jobs run in this process: another process's job may be starting."""
    for path in _sweep_dirs[-1:]:
        for job in _jobs_without_a_run(Path(path)):
            remove_unstarted_job(job)


def settle_failed_sweep() -> None:
    """After Hydra failed writing a sweep's own files (a full disk): ``remove_unstarted_jobs``, then the
    sweep directory made for this line if only multirun.yaml is left."""
    remove_unstarted_jobs()
    settle_refused_sweeps()


def unsettled_run_directories() -> list[Path]:
    """The run directories this process checked that no run has settled yet (Hydra failed in
    between, e.g. writing ``.hydra/`` on a full disk): each gets ``after_refusal``."""
    return sorted(Path(path) for path in {*_created, *_hydra_before})
