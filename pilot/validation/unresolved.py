"""Every setting that has no value ("???") or whose interpolation cannot be resolved, each named
with its value as written and the fix: ``OmegaConf.to_container`` stops at the first one, so a
line with two broken settings used to be refused twice, one setting at a time."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from pilot.config.help import CONF_DIR
from pilot.config.values import as_written, written_overrides
from pilot.validation.problems import Problem

CANNOT_RESOLVE = "cannot be resolved"


def _leaves(node: Any, prefix: str = "") -> Iterator[str]:
    """The dotted keys of ``node``'s values that are not mappings (a list is one value)."""
    for key in node:
        path = f"{prefix}{key}"
        child = node._get_node(key)  # noqa: SLF001 - the node itself: reading its value would resolve it
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_interpolation():  # noqa: SLF001
            yield from _leaves(child, f"{path}.")
        else:
            yield path


def _problem(cfg: DictConfig, key: str) -> Problem | None:
    try:
        value = OmegaConf.select(cfg, key, throw_on_resolution_failure=True, throw_on_missing=True)
        if isinstance(value, ListConfig):
            OmegaConf.to_container(value, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue:  # a group removed (~optim) or an option file that omits a key
        group = key.split(".")[0]
        return Problem(
            key,
            "???",
            f"no value: every setting is stated in conf/ (the group's option files); "
            f"Fix: choose an option for the group ({group}=<option>, see `python -m pilot --help`) "
            f"or set {key}=<value>",
        )
    except Exception as error:  # a broken interpolation, or a resolver that raised
        return Problem(
            key,
            as_written(cfg, key),
            f"{CANNOT_RESOLVE} ({type(error).__name__}: {str(error).splitlines()[0]}). Fix: "
            + (
                _environment_variable(str(as_written(cfg, key)), key, error)
                or _groups_that_do_not_fit(cfg, key, str(as_written(cfg, key)))
                or _of_another_type(error, key)
                or "give a value, or an interpolation of a key that exists (${other.key}, as Hydra/OmegaConf write them)"
            ),
        )
    return None


_ABSENT = object()


def _environment_variable(written: str, key: str, error: Exception) -> str:
    """``${oc.env:MY_LR}``: the variable unset, or set to what ``key`` cannot take: the variable is what to fix."""
    found = re.search(r"\$\{oc\.env:\s*([A-Za-z_]\w*)", written)
    if found is None:
        return ""
    name = found.group(1)
    if "not found" in str(error):
        return f"set {name} in the environment ({name}=<value> python -m pilot ...), or give a default: ${{oc.env:{name},<value>}}"
    return f"{name}={os.environ.get(name, '')!r} in the environment is not a value {key} takes; set {name} to one"


def _of_another_type(error: Exception, key: str) -> str:
    """``batch.micro_batch=${optim.lr}``: the interpolation resolves, to a value this key cannot take."""
    if type(error).__name__ != "InterpolationValidationError":
        return ""
    return f"the key it reads holds a value {key} cannot take; set {key}=<value>, or read a key of its kind"


def _set_it(cfg: DictConfig, key: str, read: str, choices: Any) -> str:
    """How to give ``key`` a value: on the command line; beside ``model.path`` (a model option naming a saved
    folder) a command-line model.config.* is refused as unread (``model_path.check_config_beside_path``), yet
    every setting must resolve: the option files are where to give it."""
    if not key.startswith("model.config.") or OmegaConf.select(cfg, "model.path", default=None) is None:
        return f"or set {key}=<value>"
    where = read.split(".")[0]
    return (
        f"or, as model.path is set and model.config is not read (the saved config.json builds the model), add "
        f"`{read.rpartition('.')[2]}: <value>` to {where}={choices.get(where)}'s YAML or `config: "
        f"{{{key.removeprefix('model.config.')}: <value>}}` to model={choices.get('model')}'s YAML"
    )


def _groups_that_do_not_fit(cfg: DictConfig, key: str, written: str) -> str:
    """A group option that reads a setting another group's chosen option does not define
    (``model=tiny_gpt`` reads ``${data.vocab_size}``; ``data=digits`` has none): the two options do not
    fit together, which is what to fix — not the interpolation. "" when that is not the case."""
    group, read = key.split(".")[0], written.removeprefix("${").removesuffix("}")
    other = read.split(".")[0]
    if not (written.startswith("${") and written.endswith("}")) or other == group or not HydraConfig.initialized():
        return ""
    if OmegaConf.select(cfg, read, default=_ABSENT, throw_on_resolution_failure=False) is not _ABSENT:
        return ""  # defined: what fails is the value it holds, not the fit of the two options
    if any(o.lstrip("+~").partition("=")[0] == key for o in written_overrides()):
        return ""  # the command line's own interpolation, not the option's
    choices = HydraConfig.get().runtime.choices
    if group not in choices or other not in choices:
        return ""
    fitting = _options_that_fit(group, other, cfg)
    named = f": {' or '.join(f'{group}={name}' for name in fitting)}" if fitting else ""
    return (
        f"{group}={choices[group]} reads {read}, which {other}={choices[other]} does not define: the two options "
        f"do not fit together (a {group} for another kind of {other}). Choose a {group} for {other}="
        f"{choices[other]}{named} (or the {other} this {group} is for: `python -m pilot --help` lists the options; "
        "an +experiment= sets both), " + _set_it(cfg, key, read, choices)
    )


def _options_that_fit(group: str, other: str, cfg: DictConfig) -> list[str]:
    """pilot's own options of ``group`` that read settings of ``other`` and find every one of them in the chosen
    ``other`` (``data=digits``: model=mlp_classifier, which reads data.in_features and data.num_classes)."""
    fitting = []
    for path in sorted((CONF_DIR / group).glob("*.yaml")):
        reads = set(re.findall(r"\$\{" + re.escape(other) + r"\.([\w.]+)\}", path.read_text()))
        found = (
            OmegaConf.select(cfg, f"{other}.{k}", default=_ABSENT, throw_on_resolution_failure=False) for k in reads
        )
        if reads and all(value is not _ABSENT for value in found):
            fitting.append(path.stem)
    return fitting


def unresolved_problems(cfg: DictConfig) -> list[Problem]:
    """One problem per setting of ``cfg`` that has no value or cannot be resolved, in config order."""
    problems = _one_missing_per_group([problem for key in _leaves(cfg) if (problem := _problem(cfg, key)) is not None])
    if not problems:  # resolution failed somewhere the walk cannot name
        try:
            OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        except Exception as error:
            key = getattr(error, "full_key", None) or "?"
            problems.append(_problem(cfg, key) or Problem(key, "?", f"{CANNOT_RESOLVE}: {error}"))
    return problems


def _one_missing_per_group(problems: list[Problem]) -> list[Problem]:
    """A group without an option (``~optim``) leaves every one of its settings without a value: one
    problem for the group, naming how many more have none, rather than a line per setting."""
    missing: dict[str, list[Problem]] = {}
    for problem in problems:
        if problem.value == "???":
            missing.setdefault(problem.key.split(".")[0], []).append(problem)
    kept = []
    for problem in problems:
        same = missing.get(problem.key.split(".")[0], []) if problem.value == "???" else []
        if same and same[0] is not problem:
            continue
        if len(same) > 1:
            problem.fix = problem.fix.replace(
                "no value:", f"no value (nor {len(same) - 1} more {problem.key.split('.')[0]}.* settings):", 1
            )
        kept.append(problem)
    return kept
