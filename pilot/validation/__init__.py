"""One validation pass before anything runs: every problem at once, each with key, value and fix.

Hydra and the schemas already refuse a misspelt key, a wrong type or an unknown
option when they compose the config. This pass checks everything else a command
line can get wrong, in this order:

1. keys nothing reads (``+key=value`` bypasses the schema) and ``_target_`` arguments;
2. numbers: nan/inf anywhere, then the range of every numeric setting (``RANGES``);
3. settings that need several values (fp16 and the scaler, the head and the classes...);
4. what needs the data: the data file, the task's own refusals, and the batch plan
   against the training split (a micro-batch larger than the split, a budget that
   buys no update or an absurd number of them).

``validate`` raises a single ``ConfigError`` listing all of them. The run modes
call it first, before a run directory holds anything of pilot's.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from pilot.config.values import as_written, enum_value, resolve_device, select, written_overrides
from pilot.errors import built_with_error, instantiation_failed
from pilot.run_directory import CONFIG_CHECKS, job_directory_problem
from pilot.validation.batch import check_task
from pilot.validation.devices import check_devices, check_precision, check_strategy
from pilot.validation.host_memory import check_host_memory
from pilot.validation.journal import check_journal
from pilot.validation.keys import check_switches, check_unknown_keys
from pilot.validation.model_data import check_model_and_data
from pilot.validation.numbers import check_finite, check_special_numbers
from pilot.validation.problems import ConfigError, Problem, with_values_as_typed
from pilot.validation.ranges import RANGES, Range, check_ranges
from pilot.validation.rental import check_rental
from pilot.validation.slurm_partition import cluster_groups, partition_down, partition_problems
from pilot.validation.unresolved import CANNOT_RESOLVE, unresolved_problems
from pilot.variant import control_problem, control_written_wrong, variant_key

__all__ = ["RANGES", "ConfigError", "Problem", "Range", "sweep_job_problem", "validate"]


def validate(cfg: DictConfig, overrides: list[str] | None = None) -> None:
    """Raise one ConfigError naming every problem; return None when the config is sound. ``overrides``: the
    command line's settings as written (default: the running Hydra job's)."""
    problems: list[Problem] = []
    overrides = written_overrides() if overrides is None else overrides
    container: Any = None
    try:
        container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception:  # a missing value or a broken interpolation: each one named
        problems.extend(unresolved_problems(cfg))
    interpolations = [p for p in problems if p.fix.startswith(CANNOT_RESOLVE)]
    device_type = _checked(problems, container, lambda: _device_type(cfg))
    checks: list[Callable[[], Any]] = [
        lambda: check_unknown_keys(cfg, "", problems),
        lambda: check_switches(cfg, overrides, problems),
        lambda: container is not None and check_finite(container, "", problems),
        lambda: check_ranges(cfg, problems),
        lambda: check_special_numbers(cfg, problems),
        lambda: device_type is not None and check_precision(cfg, device_type, problems),
        lambda: check_model_and_data(cfg, problems),
        lambda: device_type is not None and check_devices(cfg, device_type, problems),
        lambda: check_strategy(cfg, problems),
        lambda: check_rental(cfg, problems),
        lambda: check_control(cfg, problems),
        lambda: check_journal(cfg, problems),
        lambda: container is not None and check_task(cfg, problems),  # the task's settings resolve
        lambda: device_type is not None and check_host_memory(cfg, device_type, problems, overrides),
    ]
    for check in checks:
        _checked(problems, container, check)
    for interpolation in interpolations:
        if _echoes(interpolation, problems):
            problems.remove(interpolation)  # a value that reads a bad setting: that setting's problem says it once
    for copied in [p for p in problems if _reads_another(cfg, p, problems)]:
        problems.remove(copied)  # model.in_features: ${data.length}, said once, by data.length's own problem
    for missing in [p for p in problems if p.value == "???" and p.fix.startswith("no value")]:
        if any(other is not missing and other.key == missing.key for other in problems):
            problems.remove(missing)  # a check that knows the setting says it, with its own fix
    if problems:
        with_values_as_typed(problems, overrides)
        raise ConfigError(problems)


def _device_type(cfg: DictConfig) -> str:
    if enum_value(select(cfg, "run.device")) != "cuda" or torch.cuda.is_available():
        return resolve_device(cfg).type
    return "cpu"


def _checked(problems: list[Problem], container: Any, check: Callable[[], Any]) -> Any:
    """``check()``; when the config does not resolve (``container`` None), a check that reads a
    setting named unresolvable above stops there (that setting's problem says it) and gives None."""
    try:
        return check()
    except OmegaConfBaseException:
        if container is not None:
            raise
        return None


def validate_composed(composed: DictConfig) -> None:
    """``validate`` on a config as Hydra composed it (its ``hydra`` node left out, as the run receives it)."""
    task = copy.deepcopy(composed)
    with open_dict(task):
        del task["hydra"]
    validate(task, written_overrides(composed))


CONFIG_CHECKS.append(validate_composed)  # before a run directory's own answer (finished, another config)


def sweep_job_problem(composed: DictConfig) -> str | None:
    """What ``validate`` refuses in one sweep job's config as Hydra composed it (its ``hydra`` node
    left out, as the job receives it), or None: the sweeper (hydra_plugins/pilot_sweeper,
    ``hydra.sweeper.check_job``) checks every job so that none is launched when one would be refused."""
    try:
        validate_composed(composed)
    except ConfigError as error:
        return str(error)
    except Exception as error:  # the task's own code raised building it (a TypeError inside make_task)
        if not instantiation_failed(error):
            raise
        return built_with_error(error)  # as the run says it: the error and where its code raised it
    if problem := _launcher_processes_problem(composed):
        return problem
    if (directory := _job_directory(composed)) is not None:  # a fixed subdir: it may hold a run already
        return job_directory_problem(composed, directory)
    return None


def _launcher_processes_problem(composed: DictConfig) -> str | None:
    """A launcher that starts several processes per job (SLURM's tasks_per_node x nodes) for another number of
    replicas: every job failed at its start ('the launcher started 2 process(es)'), after the sweep launched."""
    launcher = OmegaConf.select(composed, "hydra.launcher", default=None)
    if not isinstance(launcher, DictConfig):
        return None
    tasks, nodes = launcher.get("tasks_per_node"), launcher.get("nodes") or 1
    if not isinstance(tasks, int) or not isinstance(nodes, int) or tasks * nodes <= 1:
        return None
    replicas = OmegaConf.select(composed, "distributed.replicas", default=1)
    if replicas == tasks * nodes:
        return None
    per_node = replicas // nodes if isinstance(replicas, int) and replicas >= nodes and replicas % nodes == 0 else None
    return (
        f"hydra.launcher.tasks_per_node={tasks} x nodes={nodes} starts {tasks * nodes} processes per job, one per "
        f"replica, but distributed.replicas={replicas}. Fix: distributed.replicas={tasks * nodes} (distributed=ddp2 "
        "or fsdp with it)" + (f", or hydra.launcher.tasks_per_node={per_node}" if per_node else "")
    )


def _job_directory(composed: DictConfig) -> Path | None:
    """The directory the job will run in (``hydra.sweep.dir``/``hydra.sweep.subdir``), or None where it
    cannot be resolved here (the job says what is wrong with it)."""
    try:
        return Path(str(composed.hydra.sweep.dir)) / str(composed.hydra.sweep.subdir)
    except OmegaConfBaseException:
        return None


def check_control(cfg: DictConfig, problems: list[Problem]) -> None:
    """``campaign.control=lr1e-4`` in any run (kept in its config.yaml, read by every later recap that pools it):
    written so that it can be no variant's, refused as a sweep refuses it."""
    control = str(select(cfg, "campaign.control") or "")
    if wrong := control_written_wrong(control):
        problems.append(Problem("campaign.control", control, f"{wrong}. Fix: {CONTROL_FIX}"))


CONTROL_FIX = (
    "the overrides of one variant (\"campaign.control='optim.lr=1e-4'\" on a command line), or campaign.control='' "
    "to compare none"
)


def sweep_problem(config: DictConfig, jobs: list[list[str]]) -> str | None:
    """What is wrong with a sweep as a whole (the sweeper's ``check_sweep``, before any job runs): a
    ``campaign.control`` written so that it can be no variant's (refused). One that is none of this
    sweep's jobs, or all of them, is only warned about: a relaunch of some variants compares with a
    control of an earlier sweep (``python -m pilot.recap --pool``)."""
    if problems := _cluster_problems(config):
        return "; ".join(problems)
    control = str(OmegaConf.select(config, "campaign.control", default="") or "")
    if wrong := control_written_wrong(control):
        return f"campaign.control={control}: {wrong}. Fix: {CONTROL_FIX}"
    if problem := control_problem(control, [variant_key(job) for job in jobs]):
        print(
            f"pilot: warning: campaign.control={control} and this sweep's {len(jobs)} job(s): {problem}; its recap "
            "compares nothing with it (another sweep's runs can be: python -m pilot.recap --pool)",
            file=sys.stderr,
        )
    return None


def _cluster_problems(config: DictConfig) -> list[str]:
    """A SLURM launcher's request against what its partition has (``sinfo``): refused where no node can meet
    it (sbatch refused it after the launch, or left the job pending for ever); a partition not up is warned."""
    target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
    if not target.endswith("SlurmLauncher") or not (groups := cluster_groups()):
        return []
    launcher = OmegaConf.select(config, "hydra.launcher")
    if problems := partition_problems(launcher, groups):
        return problems
    if down := partition_down(launcher, groups):
        print(f"pilot: warning: {down}", file=sys.stderr)
    return []


def _reads_another(cfg: DictConfig, problem: Problem, problems: list[Problem]) -> bool:
    """``problem``'s key is written as an interpolation of another problem's key (``${data.length}``)."""
    written = as_written(cfg, problem.key)
    return isinstance(written, str) and any(
        other is not problem and written.strip() == "${" + other.key + "}" for other in problems
    )


def _echoes(interpolation: Problem, problems: list[Problem]) -> bool:
    """The broken interpolation names another problem's ``key=value`` (``${pilot.tokenizer_size:...}``
    failing on the very ``data.tokenizer`` that problem reports), or fails on a key whose own problem is that
    it has no value (``Missing mandatory value: data.tokenizer``): a consequence, said once by its cause."""
    said = f"{interpolation.key}={interpolation.value!r}: {interpolation.fix}"  # as printed, its cause included
    return any(
        p is not interpolation
        and (f"{p.key}={p.value}" in said or (p.value == "???" and f"Missing mandatory value: {p.key}" in said))
        for p in problems
    )
