"""What a command line does with config groups that Hydra refuses in its own words: '+' on a group that
has a choice, a group the config leaves out chosen, forced or removed without '+' (``experiment=x``,
``++experiment=x``, ``~experiment``), and the groups a plug-in's folder adds (``hydra.searchpath``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig


def chosen_groups(cfg: DictConfig) -> set[str]:
    """The groups the default list gives a choice (model, optim...): the sections the composed config has."""
    return {str(k) for k in cfg.keys()}


def groups_in_defaults(conf_dir: str) -> set[str]:
    """The groups the root config's defaults list chooses, read before anything is composed (a line Hydra
    cannot compose); not those a line adds with '+'."""
    try:
        defaults = yaml.safe_load((Path(conf_dir) / "config.yaml").read_text()).get("defaults", [])
    except (OSError, yaml.YAMLError, AttributeError):
        return set()
    return {str(next(iter(entry))) for entry in defaults if isinstance(entry, dict) and entry}


def searchpath_groups(overrides: list) -> set[str]:
    """The groups a plug-in's folder adds (``hydra.searchpath=[file:///my/conf]`` with ``my/conf/mygroup/``):
    its subfolders. Hydra's group listing reads the root config's folder alone."""
    found: set[str] = set()
    listed = [o.value() for o in overrides if o.key_or_group == "hydra.searchpath"]
    for path in [p for paths in listed if isinstance(paths, list) for p in paths if str(p).startswith("file://")]:
        with suppress(OSError):  # a folder that is not there
            found |= {d.name for d in Path(path.removeprefix("file://")).iterdir() if d.is_dir()}
    return found


def group_problem(
    override: Any, cfg: DictConfig, groups: set[str], added: set[str], options: Callable[[str], list[str]], values: list
) -> str | None:
    """The line for a group override Hydra refuses in its own words (several lines, or one naming no fix);
    ``added``: the groups the line adds with '+'; ``values``: the override's values (a sweep's each)."""
    key, line = override.key_or_group, override.input_line
    if key not in groups or key.startswith("hydra"):
        return None
    value, chosen = line.partition("=")[2], key in chosen_groups(cfg)
    if override.is_add() and chosen:
        return f"+{key}={value}: {key} already has a choice, and '+' adds a group the config does not have. Fix: {key}={value}"
    if chosen or key in added:
        return None
    if override.is_delete():  # Hydra: "Could not delete 'experiment'. No match in the defaults list"
        return f"{line}: the config has no {key} to remove ('+' adds one). Fix: leave {line} out"
    each = [x for v in values for x in (v if isinstance(v, list) else [v])]  # experiment=[a,b]: each option
    if line.startswith("++") or not override.is_add():  # '++' forces a setting: Hydra refuses it for a group
        if all(str(v) in options(key) for v in each):  # else: no such option, said as such
            why = (
                "'++' forces a setting, and a group"
                if line.startswith("++")
                else f"the config has no {key} to replace; one"
            )
            return f"{line}: {why} is added with '+'. Fix: +{key}={value}"
    return None
