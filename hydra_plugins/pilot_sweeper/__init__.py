"""Hydra's basic sweeper, composing each job's config once instead of twice.

Hydra's ``BasicSweeper`` composes every job's config to check the batch before launching it (a
typo in job 7 fails before job 1 runs), and then its launcher composes each job's config again:
here ~0.2-0.4 s per compose, paid twice per job. ``ComposeOnceSweeper`` keeps the configs its
check composed and hands each to the launcher when it asks for the same job (same master config,
same overrides), so the launcher gets exactly the object its own call would have built. At most
``KEEP`` configs are kept (~0.4 MB each); the launcher composes the rest itself, as before.

It also refuses (exit 2, before any job runs) a sweep over no values (``seed=range(0)``), with
``check_sweep`` a sweep that check refuses as a whole (pilot's: a control that is none of its jobs) and,
with ``check_job`` (a function named by its path: pilot's ``sweep_job_problem``), a sweep with a
job that check refuses, naming every such job: one bad value does not leave half a sweep run.

Selected in conf/config.yaml (``override hydra/sweeper: compose_once``); its settings are the
basic sweeper's (``max_batch_size``, ``params``), ``check_sweep`` and ``check_job``. Kept free of pilot and torch: Hydra imports every
plugin module whenever any Hydra app starts in this environment. No ``from __future__ import
annotations``: Hydra runs this module before it is in ``sys.modules``, where a dataclass with
string annotations looks itself up.
"""

import copy
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.types import HydraContext, TaskFunction
from hydra.utils import get_method
from omegaconf import DictConfig, OmegaConf, open_dict

KEEP = 128  # composed configs kept between the batch's check and its launch
SCHEMA = "schema"  # the name of pilot's schema entries in a group (pilot.config.schema registers them)


@dataclass
class ComposeOnceSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.pilot_sweeper.ComposeOnceSweeper"
    # "module.function": called with each job's composed config before any job runs; it returns
    # what is wrong with that job (a message) or None. Any problem stops the sweep (exit 2). Here,
    # not in conf/config.yaml: another sweeper (hydra/sweeper=basic, optuna) would not know the key.
    check_job: Optional[str] = "pilot.validation.sweep_job_problem"  # noqa: UP045 (OmegaConf reads Optional)
    # "module.function": called once with the master config and every job's overrides; it returns what
    # is wrong with the sweep as a whole (pilot's: a campaign.control that is none of the jobs) or None
    check_sweep: Optional[str] = "pilot.validation.sweep_problem"  # noqa: UP045


ConfigStore.instance().store(group="hydra/sweeper", name="compose_once", node=ComposeOnceSweeperConf, provider="pilot")


class ComposedOnce:
    """A config loader that answers ``load_sweep_config`` from configs composed ahead (``compose``),
    each handed out once; everything else goes to the loader it wraps."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._ready: dict[tuple[int, tuple[str, ...]], DictConfig] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "_loader":  # not set yet (an object being unpickled): no recursion
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __reduce__(self) -> tuple:
        """Pickled (submitit sends the launcher to each job) as the loader alone, nothing kept."""
        return ComposedOnce, (self._loader,)

    def compose(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """Compose one job's config now (raising what composing it raises) and keep it, up to ``KEEP``."""
        composed = self._loader.load_sweep_config(master_config, sweep_overrides)
        if len(self._ready) < KEEP:
            self._ready[(id(master_config), tuple(sweep_overrides))] = composed
        return composed

    def get_group_options(self, group_name: str, *args: Any, **kwargs: Any) -> list[str]:
        """A group's options without the schema entries pilot keeps in Hydra's ConfigStore (``schema``,
        ``schema_<option>``: types, no values): ``-m 'optim=glob(*)'`` swept them as jobs (optim=schema, refused)."""
        options = self._loader.get_group_options(group_name, *args, **kwargs)
        return [o for o in options if not (o == SCHEMA or o.startswith(f"{SCHEMA}_"))]

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        ready = self._ready.pop((id(master_config), tuple(sweep_overrides)), None)
        return ready if ready is not None else self._loader.load_sweep_config(master_config, sweep_overrides)


class ComposeOnceSweeper(BasicSweeper):
    """``BasicSweeper`` whose launcher reuses the configs composed to check each batch, which refuses
    a sweep with no job and, with ``check_job``, a sweep with a job that would be refused."""

    def __init__(
        self,
        max_batch_size: int | None,
        params: dict[str, str] | None = None,
        check_job: str | None = None,
        check_sweep: str | None = None,
    ):
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.check_job = get_method(check_job) if check_job else None
        self.check_sweep = get_method(check_sweep) if check_sweep else None
        self.checked = 0  # jobs checked so far, over all batches: the next job's number
        self.directories: dict[str, int] = {}  # each checked job's directory -> its number
        self.jobs: list[list[str]] = []  # every job's overrides, for the check of the sweep as a whole

    def sweep(self, arguments: list[str]) -> Any:
        assert self.hydra_context is not None
        launcher = str(OmegaConf.select(self.config, "hydra.launcher._target_", default="") or "")
        if launcher.endswith("SlurmLauncher") and shutil.which("srun") is None:
            _refuse(
                "hydra/launcher=slurm: this machine has no SLURM client (srun is not on PATH), so no job could be "
                "submitted. Fix: run the command on the cluster's login node, or hydra/launcher=local_parallel "
                "(this machine, in parallel) or no launcher (one job after the other)."
            )
        if problems := _launcher_problems(OmegaConf.select(self.config, "hydra.launcher")):
            _refuse("; ".join(problems) + "; no job was launched")
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides([*self._parse_config(), *arguments])
        try:
            empty = [o.input_line for o in overrides if o.is_discrete_sweep() and not list(o.sweep_string_iterator())]
            jobs = [job for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]
        except (ValueError, HydraException) as error:  # range(0, 3, 0); interval(), which only optimisers sample
            swept = " ".join(o.input_line for o in overrides if o.is_sweep_override())
            _refuse(
                f"{swept}: the sweep cannot be expanded into jobs: {error}. Fix: comma-separated values "
                "(optim.lr=1e-3,3e-3), range(start, stop[, step]) with a step that is not 0, or choice(...); "
                "interval() and tag() are for optimising sweepers (Optuna, Ax), not this one"
            )
        if empty:
            _refuse(
                f"{', '.join(empty)}: a sweep over no values launches no job. Fix: give it at least one "
                "value (range(0, 2) is 0 and 1)."
            )
        self.jobs = jobs  # the sweep as a whole is checked once its first batch's jobs are (``_check_sweep``)
        for line in _sweep_warnings(overrides, len(jobs)):
            print(f"pilot: warning: {line}", file=sys.stderr)
        return super().sweep(arguments)

    def _check_sweep(self) -> None:
        """The sweep as a whole (its control), after its jobs: a job that is refused is said alone, not
        after a warning about the control that named its bad value."""
        if self.check_sweep is not None:
            problem = self.check_sweep(self.config, self.jobs)
            if problem:
                _refuse(f"{problem}; no job was launched")

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        loader = ComposedOnce(hydra_context.config_loader)
        super().setup(
            hydra_context=HydraContext(config_loader=loader, callbacks=hydra_context.callbacks),
            task_function=task_function,
            config=config,
        )

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.hydra_context is not None and self.config is not None
        first, problems = self.checked, []
        self.checked += len(batch)
        progress = _CheckProgress(len(batch), first)
        with _each_config_file_read_once():
            for number, overrides in enumerate(batch, start=first):
                composed = self.hydra_context.config_loader.compose(self.config, list(overrides))
                problem = self._job_problem(composed, number)
                if problem:
                    problems.append(f"job {number} ({' '.join(overrides)}): {problem}")
                progress.checked(number - first + 1)
        if problems:
            launched = f"jobs 0-{first - 1} ran, none of these was launched" if first else "none was launched"
            _refuse(
                f"{len(problems)} of the sweep's jobs {first}-{self.checked - 1} would be refused; {launched}:\n"
                + "\n".join(problems),
                jobs_launched=first,
            )
        if first == 0:
            self._check_sweep()

    def _job_problem(self, composed: DictConfig, number: int) -> str | None:
        """Where the job would write, then ``check_job``, each on one copy of the job's config as the job
        will see it: its number set and Hydra's config current (``${hydra:job.num}``,
        ``${hydra:runtime.cwd}`` resolve)."""
        with _as_job(composed, number) as job:
            problem = self._directory_problem(job, composed, number)
            return problem or (self.check_job(job) if self.check_job else None)

    def _directory_problem(self, job: DictConfig, composed: DictConfig, number: int) -> str | None:
        """Where the job would write, against the sweep directory and the jobs before it: the sweep
        directory itself (beside its recap), outside it (no recap finds it), or a directory an earlier
        job of this sweep writes (it was refused at run time, after the others ran)."""
        try:
            sweep_dir = Path(os.path.normpath(os.path.abspath(str(job.hydra.sweep.dir))))
            subdir = str(job.hydra.sweep.subdir or "")
        except Exception:  # noqa: BLE001 - an interpolation the check cannot resolve here: the job says it
            return None
        directory = Path(os.path.normpath(sweep_dir / subdir))
        fix = "Fix: a hydra.sweep.subdir that differs per job inside the sweep directory (the default, ${hydra.job.num}-...)"
        if directory == sweep_dir:
            return f"hydra.sweep.subdir={subdir!r} puts the job in the sweep directory itself, beside its recap. {fix}"
        if sweep_dir not in directory.parents:
            return f"hydra.sweep.subdir={subdir!r} puts the job outside the sweep directory ({directory}): its recap would not find it. {fix}"
        if "${now:" in str(OmegaConf.to_container(composed.hydra.sweep, resolve=False).get("subdir", "")):
            return None  # resolved when each job starts: the check's clock is not the jobs'
        earlier = self.directories.setdefault(str(directory), number)
        if earlier != number:
            return f"hydra.sweep.subdir={subdir!r} gives it job {earlier}'s directory ({directory}): one run directory holds one run. {fix}"
        return None


_READ: dict[tuple, Any] = {}  # (the repository's sources, a config's path) -> what Hydra read there


@contextmanager
def _each_config_file_read_once() -> Iterator[None]:
    """Hydra reads and parses every YAML file of the defaults list again at each compose (about 40% of a
    job's compose, ~0.05 s): while a batch's jobs are composed, each file is read once and each compose gets
    its own deep copy of what was read, as a fresh read would give. Only while one batch is composed and
    checked, a second or so; a Hydra without ``ConfigRepository.load_config`` composes as before."""
    try:
        from hydra._internal.config_repository import ConfigRepository
    except ImportError:
        yield
        return
    read = getattr(ConfigRepository, "load_config", None)
    if read is None:
        yield
        return

    def read_once(repository: Any, config_path: str) -> Any:
        key = (tuple((type(source).__name__, source.path) for source in repository.sources), config_path)
        if key not in _READ:
            _READ[key] = read(repository, config_path)
        return copy.deepcopy(_READ[key])

    ConfigRepository.load_config = read_once
    try:
        yield
    finally:
        ConfigRepository.load_config = read
        _READ.clear()


@contextmanager
def _as_job(composed: DictConfig, number: int) -> Iterator[DictConfig]:
    """A copy of the job's config as the job will see it: its number set and Hydra's config current
    (``${hydra:job.num}``, ``${hydra:runtime.cwd}`` resolve); Hydra's own config put back after."""
    job = copy.deepcopy(composed)
    with open_dict(job):
        job.hydra.job.num = job.hydra.job.id = number
    current = HydraConfig.instance().cfg
    HydraConfig.instance().set_config(job)
    try:
        yield job
    finally:
        HydraConfig.instance().cfg = current


class _CheckProgress:
    """Said while a large batch of jobs is checked before any starts (each job's config composed and checked,
    a fraction of a second each: range(0,300) printed nothing for over a minute): where it stands, every
    ``EVERY_S`` seconds, once the check has taken ``EVERY_S``."""

    EVERY_S = 10.0

    def __init__(self, jobs: int, first: int) -> None:
        self.jobs, self.first, self.started = jobs, first, time.monotonic()
        self.said = self.started

    def checked(self, done: int) -> None:
        now = time.monotonic()
        if now - self.said < self.EVERY_S or done >= self.jobs:
            return
        self.said = now
        left = (now - self.started) / done * (self.jobs - done)
        print(
            f"pilot: checking the sweep's jobs before any starts: {done} of {self.jobs} checked"
            + (f" (from job {self.first})" if self.first else "")
            + f", about {left:.0f} s left",
            file=sys.stderr,
            flush=True,
        )


def _sweep_warnings(overrides: Sequence[Any], jobs: int) -> list[str]:
    """A sweep that repeats a value (``optim.lr=1e-3,1e-3``: two identical jobs) or sweeps nothing (``-m``
    with no comma: one job launched as a sweep): accepted, said once (an outside examination)."""
    lines = []
    for override in overrides:
        if override.is_discrete_sweep():
            values = [str(v) for v in override.sweep_string_iterator()]
            if twice := sorted({v for v in values if values.count(v) > 1}):
                lines.append(
                    f"{override.input_line}: {', '.join(twice)} given more than once, so identical jobs run "
                    "(repeats of one setting differ by seed: seed=0,1,2)"
                )
            if override.is_range_sweep() and len(values) == 1:  # range(1e-4,1e-3): its step is 1
                lines.append(
                    f"{override.input_line}: one value ({values[0]}), as range's step is 1 unless given; for several, "
                    "give the step (range(start, stop, step)) or list them (a,b,c)"
                )
    if jobs == 1 and not any(o.is_sweep_override() for o in overrides):
        lines.append("-m with nothing swept launches one job as a sweep (key=a,b sweeps a key's values)")
    if jobs > MANY_JOBS:  # range(0,100000): hours of checks before the first job, said nothing for minutes
        lines.append(
            f"{jobs} jobs: each job's config is checked before any starts (a fraction of a second each), then "
            "each runs as the launcher allows; Ctrl-C stops it. Fix: fewer values if that many was not meant"
        )
    return lines


MANY_JOBS = 1000  # more jobs than this in one sweep: said before their checks begin


# submitit's sizes of a job: (the least it can be, what it is); a bad one was submitit's or SLURM's
# error after the launch (a negative timeout "left submitit no result")
LAUNCHER_SIZES = {
    "timeout_min": (1, "the minutes a job may run before it is killed"),
    "cpus_per_task": (1, "the CPUs each task gets"),
    "tasks_per_node": (1, "processes per node"),
    "nodes": (1, "nodes per job"),
    "gpus_per_node": (0, "GPUs per node"),
    "mem_gb": (0, "memory per node in GiB"),
    "signal_delay_s": (0, "the seconds before the time limit at which SLURM signals the job to checkpoint"),
}


def _launcher_problems(launcher: Any) -> list[str]:
    """Each size of a submitit launcher (``hydra.launcher.*``) that no job can have, named with its fix."""
    problems = []
    for key, (least, what) in LAUNCHER_SIZES.items():
        value = OmegaConf.select(launcher, key, default=None) if launcher is not None else None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            problems.append(
                f"hydra.launcher.{key}={value!r}: {what}, a whole number >= {least}. "
                f"Fix: hydra.launcher.{key}=<a whole number >= {least}>"
            )
    return problems


class SweepRefused(SystemExit):
    """Exit 2 of a sweep refused before a batch's jobs ran; ``jobs_launched``: how many earlier batches ran."""

    def __init__(self, jobs_launched: int) -> None:
        super().__init__(2)
        self.jobs_launched = jobs_launched


def _refuse(message: str, jobs_launched: int = 0) -> None:
    print(f"pilot: {message}", file=sys.stderr)
    raise SweepRefused(jobs_launched)
