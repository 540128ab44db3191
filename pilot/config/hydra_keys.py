"""Hydra's own settings given on the command line (``hydra.*``), checked against what Hydra reads.

The chosen launcher's (``hydra.launcher.*``):
``hydra.launcher.cpus_per_taks=1`` got Hydra's raw "Key 'cpus_per_taks' not in 'LocalQueueConf'" and its
advice to add it with '+'; added so, submitit raised a NameError traceback at the first submission, after
the sweep directory was made. A key the launcher does not read is refused with the nearest ones.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from hydra import compose
from hydra import conf as hydra_conf
from omegaconf import DictConfig, OmegaConf

from pilot.config.values import typed_value
from pilot.errors import ConfigRefused

# the submitit launchers' own settings, by the launcher's _target_ (their structured configs)
QUEUE_CONFS = {
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher": "LocalQueueConf",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher": "SlurmQueueConf",
}


def launcher_settings(target: str) -> list[str] | None:
    """The settings the launcher ``target`` reads; None for one pilot does not know (not judged)."""
    conf = _queue_conf(target)
    return None if conf is None else [field.name for field in dataclasses.fields(conf)]


def _queue_conf(target: str) -> Any:
    """The structured config (a dataclass) of the submitit launcher ``target``; None for another launcher."""
    name = QUEUE_CONFS.get(target)
    if name is None:
        return None
    try:
        from hydra_plugins.hydra_submitit_launcher import config as submitit_config
    except ImportError:
        return None
    return getattr(submitit_config, name)


def unknown_launcher_keys(launcher: DictConfig | dict[str, Any], choice: str) -> list[str]:
    """One line per ``hydra.launcher`` key the chosen launcher (``hydra/launcher=<choice>``) does not read,
    with the nearest it does."""
    known = launcher_settings(str(launcher.get("_target_", "")))
    if known is None:
        return []
    return [launcher_key_line(key, known, choice) for key in launcher if key not in known]


def launcher_key_line(key: str, known: list[str], choice: str) -> str:
    near = difflib.get_close_matches(key, known, n=2, cutoff=0.6)
    hint = (
        f"did you mean {' or '.join(f'hydra.launcher.{k}' for k in near)}?"
        if near
        else "it reads " + ", ".join(f"hydra.launcher.{k}" for k in known if not k.startswith("_"))
    )
    return f"hydra.launcher.{key}: not a setting of hydra/launcher={choice}; {hint}"


def refuse_unknown_launcher_keys(config: DictConfig) -> None:
    """At a multirun's start (a Hydra callback, before the launcher makes anything): ``ConfigRefused``
    naming every ``hydra.launcher`` key the chosen launcher does not read (one added with '+')."""
    choice = str(config.hydra.runtime.choices.get("hydra/launcher", ""))
    lines = unknown_launcher_keys(config.hydra.launcher, choice)
    if lines:
        raise ConfigRefused("\n".join(lines))


def suggested_for(key: str, choice: str | None, compose_launcher) -> str | None:
    """The command line's ``hydra.launcher.<key>`` that ``hydra/launcher=<choice>`` (``compose_launcher``
    gives its node) does not read, said with the nearest ones; None when it reads it or is not known."""
    name = key.removeprefix("hydra.launcher.").split(".")[0]
    if choice is None:
        return (
            f"{key}: the default launcher (basic: the jobs one after another in this process) has no settings. "
            "Fix: choose one with settings, hydra/launcher=local_parallel or hydra/launcher=slurm"
        )
    known = launcher_settings(str(compose_launcher(choice).get("_target_", "")))
    return None if known is None or name in known else launcher_key_line(name, known, choice)


# Hydra's settings whose keys are free (a logging config, a launcher's or sweeper's, env_set's variables)
OPEN_HYDRA_NODES = (
    "hydra_logging",
    "job_logging",
    "sweeper",
    "launcher",
    "callbacks",
    "job.env_set",
    "runtime.choices",
)


@functools.cache
def hydra_settings() -> tuple[str, ...]:
    """Every setting Hydra reads under ``hydra``, dotted (run.dir, sweep.subdir, job.chdir, ...): its
    ``HydraConf`` dataclass walked."""

    def walk(node: DictConfig, prefix: str = "") -> Iterator[str]:
        for key in node.keys():
            child = node._get_node(key)  # noqa: SLF001 - the node, unresolved (MISSING and ${...} kept)
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none() and len(child):
                yield from walk(child, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    return tuple(walk(OmegaConf.structured(hydra_conf.HydraConf)))


def unknown_hydra_key(key: str) -> str | None:
    """``hydra.run_dir`` or ``hydra.sweep.directory``: a ``hydra.*`` key Hydra does not read, with the nearest
    ones it does; None for one it reads (or one under a node whose keys are free)."""
    name, known = key.removeprefix("hydra."), hydra_settings()
    free = any(name == node or name.startswith(node + ".") for node in OPEN_HYDRA_NODES)
    if free or name in known or any(setting.startswith(name + ".") for setting in known):
        return None
    section, _, leaf = name.rpartition(".")  # job.chdirr: job's own settings first (not job.id, for 'job.')
    siblings = {setting.rpartition(".")[2]: setting for setting in known if setting.rpartition(".")[0] == section}
    near = [siblings[k] for k in difflib.get_close_matches(leaf, list(siblings), n=2, cutoff=0.6)]
    near = near or difflib.get_close_matches(name, known, n=2, cutoff=0.6)  # run_dir: run.dir
    return "did you mean " + " or ".join(f"hydra.{k}" for k in near) + "?" if near else "Hydra does not read it"


def refuse_added_hydra_keys(config: DictConfig) -> None:
    """``+hydra.run.dirr=x`` (a typo added with '+'): Hydra keeps it and reads ``hydra.run.dir``, the run
    went to the default directory and nothing was said. ``ConfigRefused`` naming each key Hydra does not
    read under ``hydra``, with the nearest ones."""
    lines = []
    node = OmegaConf.select(config, "hydra.overrides.hydra", default=None)
    for line in OmegaConf.to_container(node, resolve=False) if node is not None else []:  # as typed: ${...} unresolved
        key = str(line).split("=", 1)[0]
        if key.startswith("+hydra.") and not key.startswith("++") and (hint := unknown_hydra_key(key[1:])):
            lines.append(f"{key}: not a setting of Hydra's ('+' added it, and nothing reads it); {hint}")
    if lines:
        raise ConfigRefused("\n".join(lines))


def refuse_escaping_output_subdir(config: DictConfig) -> None:
    """``hydra.output_subdir=../train1/.hydra``: Hydra wrote its config.yaml, overrides.yaml and hydra.yaml
    into another run's directory (overwriting the record of a config that run never used), or anywhere
    else. ``ConfigRefused`` unless it is null (no files) or a relative path inside the run directory."""
    subdir = OmegaConf.select(config, "hydra.output_subdir", default=".hydra")
    if subdir is None:
        return
    path = PurePath(str(subdir).strip())
    if path.parts and not path.is_absolute() and ".." not in path.parts:  # "" and "." have no parts: the run itself
        return
    raise ConfigRefused(
        f"hydra.output_subdir={subdir!r}: Hydra writes its config.yaml, overrides.yaml and hydra.yaml there, which "
        "must be a folder inside the run's own directory (elsewhere they overwrite another run's record of its "
        "config, or land outside any run). Fix: leave it out (.hydra), a relative name such as hydra.output_subdir=.hydra_files, "
        "or hydra.output_subdir=null (no files)"
    )


def hydra_setting_lines(override: Any, overrides: list, values: list) -> list[str]:
    """``hydra.launcher.<key>`` the chosen launcher does not read (or a value it cannot take), ``hydra.run_dir``
    (a key Hydra does not read: its refusal advised adding it with '+')."""
    key = override.key_or_group
    if key.startswith("hydra.launcher."):
        choice = next((str(o.value()) for o in overrides if o.key_or_group == "hydra/launcher"), None)
        said = suggested_for(key, choice, _launcher_node) or _launcher_value(key, choice, values)
        return [said] if said else []
    hint = None if override.is_add() else unknown_hydra_key(key)  # '+hydra.x': refuse_added_hydra_keys
    return [f"{override.input_line}: not a setting of Hydra's; {hint}"] if hint else []


def _launcher_value(key: str, choice: str | None, values: list) -> str | None:
    """``hydra.launcher.timeout_min=abc``: a value the launcher's setting cannot take (Hydra's 'could not be
    converted to Integer', no fix), said with what it takes and its default."""
    if choice is None:
        return None
    node, name = _launcher_node(choice), key.removeprefix("hydra.launcher.")
    default = OmegaConf.select(node, name, default=None)
    kind = _field_type(str(node.get("_target_", "")), name)  # mem_gb: Optional[int], its default None
    whole = (isinstance(default, int) and not isinstance(default, bool)) or kind in (int, int | None)
    for value in values:
        wrong = isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit()))
        if whole and wrong and not (value is None and kind == int | None):
            return (
                f"{key}={typed_value(value)}: {key} takes a whole number (the default is {key}={typed_value(default)})"
            )
        if kind is str and isinstance(value, (list, dict)):  # name=[a]: 'Cannot convert list to string'
            shown = f"[{','.join(map(str, value))}]" if isinstance(value, list) else typed_value(value)
            return f"{key}={shown}: {key} takes one text, not a list (the default is {key}={default})"
    return None


def _field_type(target: str, name: str) -> Any:
    """The type the launcher ``target``'s structured config gives its setting ``name`` (None when unknown)."""
    conf = _queue_conf(target)
    fields = {field.name: field.type for field in dataclasses.fields(conf)} if conf is not None else {}
    return _plain_type(fields.get(name))


def _plain_type(annotation: Any) -> Any:
    """``Optional[int]`` as ``int | None``, a plain type as itself."""
    args = getattr(annotation, "__args__", None)
    if args and type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None)) | None
    return annotation


def _launcher_node(choice: str) -> DictConfig:
    """``hydra.launcher`` as ``hydra/launcher=<choice>`` composes it."""
    return compose("config", overrides=[f"hydra/launcher={choice}"], return_hydra_config=True).hydra.launcher
