"""What a command line does with config groups that Hydra refuses in its own words: '+' on a group that
has a choice, a group the config leaves out chosen, forced or removed without '+' (``experiment=x``,
``++experiment=x``, ``~experiment``), and the groups a plug-in's folder adds (``hydra.searchpath``)."""

from __future__ import annotations

import re
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


# a number or true/false for a group (Lightning's precision=16): Hydra's ValueError traceback; what was meant
OPTION_MEANT = {
    "precision": {"16": "fp16", "32": "fp32", "64": "fp32"},
    "adapter": {"true": "lora", "false": "none"},
    "memory": {"true": "checkpointing", "false": "none"},
}
SETTING_MEANT = {
    "batch": "batch.micro_batch={v}",
    "budget": "budget.value={v}",
    "distributed": "distributed.replicas={v}",
}
NOT_A_NAME = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf|nan|true|false", re.IGNORECASE)


def group_value_problem(argument: str, conf_dir: str) -> str | None:
    """``optim=null``, ``precision=16``, ``adapter=false``, ``-m precision=range(0,2)`` (Hydra's ValueError and
    traceback: a group takes an option's name) and ``optim=[sgd,adamw]`` for a group of the defaults list (Hydra
    merges the options, the last one wins: one run, no word): the line's problem and its fix, else None."""
    key, _, value = argument.lstrip("+").partition("=")
    folder = Path(conf_dir) / key
    if key.startswith("hydra/") or not folder.is_dir():
        return None
    options = sorted(p.stem for p in folder.glob("*.yaml"))
    listed = f"conf/{key}/: {', '.join(options)}"
    if value.strip().startswith(("range(", "interval(")):
        return f"{argument}: a range makes numbers, and a config group takes option names ({listed}). Fix: -m {key}=a,b"
    values = [v.strip() for v in value.strip().strip("[]").split(",")]
    defaulted = key in groups_in_defaults(conf_dir)
    if "null" in values:  # ~key fails too: every option of pilot's groups states settings the schema needs
        leave = "the defaults list's choice" if defaulted else "there is none without '+'"
        return (
            f"{argument}: a config group takes one of its options, and null is none. Fix: {'' if defaulted else '+'}"
            f"{key}=<an option> ({listed}), or leave the argument out ({leave})"
        )
    for text in (v for v in values if NOT_A_NAME.fullmatch(v) and v not in options):
        meant = [OPTION_MEANT.get(key, {}).get(v.lower(), v) for v in values]  # -m precision=16,32: fp16,fp32
        if all(m in options for m in meant):
            fix = f"{'-m ' if len(meant) > 1 else ''}{key}={','.join(meant)}"
        else:
            setting = SETTING_MEANT.get(key, "").format(v=value)  # batch=32: batch.micro_batch=32
            fix = f"{'-m ' if len(values) > 1 else ''}{setting}" if setting else f"{key}=<an option> ({listed})"
        kind = "a boolean" if text.lower() in ("true", "false") else "a number"
        return f"{argument}: {text} is read as {kind}, and a config group takes an option's name. Fix: {fix}"
    if value.strip().startswith("[") and defaulted and len(values) > 1:
        return (
            f"{argument}: a list chooses several options of {key}, merged in order: one run, with the last one's "
            f"settings over the others'. Fix: -m {key}={','.join(values)} for a run each, or {key}=<one option>"
        )
    return None
