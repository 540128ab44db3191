"""Hydra's own settings given on the command line (``hydra.*``), checked against what Hydra reads.

The chosen launcher's (``hydra.launcher.*``):
``hydra.launcher.cpus_per_taks=1`` got Hydra's raw "Key 'cpus_per_taks' not in 'LocalQueueConf'" and its
advice to add it with '+'; added so, submitit raised a NameError traceback at the first submission, after
the sweep directory was made. A key the launcher does not read is refused with the nearest ones.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import PurePath
from typing import Any

from hydra import conf as hydra_conf
from omegaconf import DictConfig, OmegaConf

from pilot.errors import ConfigRefused

# the submitit launchers' own settings, by the launcher's _target_ (their structured configs)
QUEUE_CONFS = {
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher": "LocalQueueConf",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher": "SlurmQueueConf",
}


def launcher_settings(target: str) -> list[str] | None:
    """The settings the launcher ``target`` reads; None for one pilot does not know (not judged)."""
    name = QUEUE_CONFS.get(target)
    if name is None:
        return None
    try:
        from hydra_plugins.hydra_submitit_launcher import config as submitit_config
    except ImportError:
        return None
    return [field.name for field in dataclasses.fields(getattr(submitit_config, name))]


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


# Hydra's own dataclasses for the sections a user sets by hand; '+' adds any key there without a word
HYDRA_SECTIONS = {"run": "RunDir", "sweep": "SweepDir", "job": "JobConf", "": "HydraConf"}


def refuse_added_hydra_keys(config: DictConfig) -> None:
    """``+hydra.run.dirr=x`` (a typo added with '+'): Hydra keeps it and reads ``hydra.run.dir``, the run
    went to the default directory and nothing was said. ``ConfigRefused`` naming each key Hydra does not
    read under ``hydra``, ``hydra.run``, ``hydra.sweep`` and ``hydra.job``, with the nearest ones."""
    lines = []
    node = OmegaConf.select(config, "hydra.overrides.hydra", default=None)
    for line in OmegaConf.to_container(node, resolve=False) if node is not None else []:  # as typed: ${...} unresolved
        key = str(line).split("=", 1)[0]
        if not key.startswith("+hydra.") or key.startswith("++"):
            continue
        parts = key.removeprefix("+hydra.").split(".")
        section, name = (".".join(parts[:-1]), parts[-1]) if len(parts) > 1 else ("", parts[0])
        if section not in HYDRA_SECTIONS:
            continue
        known = [f.name for f in dataclasses.fields(getattr(hydra_conf, HYDRA_SECTIONS[section]))]
        if name not in known:
            near = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
            prefix = f"hydra.{section}." if section else "hydra."
            hint = f"did you mean {' or '.join(prefix + k for k in near)}?" if near else "Hydra does not read it"
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
