"""Keys nothing reads: a ``+key=value`` past the schema, and a plug-in's model or data keys that are
not arguments of its ``_target_``."""

from __future__ import annotations

import difflib
import inspect
from dataclasses import fields, is_dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.nodes import BooleanNode

from pilot.config.values import select, target_keywords
from pilot.validation.problems import Problem

# Hydra's instantiate keys: never arguments of the target
HYDRA_KEYS = ("_target_", "_convert_", "_recursive_", "_partial_", "_args_")


def check_unknown_keys(node: DictConfig, prefix: str, problems: list[Problem]) -> None:
    """A ``+key=value`` override skips the schema's struct flag: the key would be read by nothing
    (or, under model/data, break the call of ``_target_``). Schema'd nodes are checked here; in one
    with a ``_target_``, a keyword its target accepts is a setting (``+adapter.use_dora=true``)."""
    schema = OmegaConf.get_type(node)
    known = {f.name for f in fields(schema)} if is_dataclass(schema) else None
    extra = [key for key in node.keys() if known is not None and key not in known]
    if extra and "_target_" in known:  # keys its _target_ reads (peft.LoraConfig's use_dora...) are settings
        known |= target_keywords(node) & set(extra)
    for key in node.keys():
        full_key = f"{prefix}{key}"
        if known is not None and key not in known:
            near = _nearest_keyword(node, str(key)) if "_target_" in known else []
            problems.append(
                Problem(
                    full_key,
                    select(node, str(key)),
                    "not a setting: nothing reads it (a '+' override adds keys the schema "
                    "does not know). Fix: drop it"
                    + (
                        f", or did you mean {' or '.join(f'{prefix}{n}' for n in near)}?"
                        if near
                        else f", or one of {', '.join(sorted(known))}."
                        if known
                        else f"; {prefix.rstrip('.')} has no settings"
                    )
                    + (" (adapter=lora has r, lora_alpha, ...)." if prefix == "adapter." and not known else ""),
                )
            )
            continue
        child = select(node, str(key))
        if isinstance(child, DictConfig) and full_key != "rental.catalog":  # the catalog: any GPU name
            check_unknown_keys(child, f"{full_key}.", problems)


def check_switches(cfg: DictConfig, overrides: list[str], problems: list[Problem]) -> None:
    """A switch (a true/false setting) given a number other than 0 or 1 on the command line: OmegaConf
    reads any non-zero integer as true (``estimate.in_runs=2`` ran as true), and a number there is a
    count or a size meant for another key."""
    for override in overrides:
        key, _, value = str(override).lstrip("+~").partition("=")
        if not value.strip().lstrip("-").isdigit() or value.strip() in ("0", "1"):
            continue
        parent_key, _, leaf = key.rpartition(".")
        parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
        try:
            node = parent._get_node(leaf) if isinstance(parent, DictConfig) else None  # noqa: SLF001 - its type
        except Exception:  # noqa: BLE001 - a key the schema does not know: check_unknown_keys says it
            continue
        if isinstance(node, BooleanNode):
            problems.append(
                Problem(key, value.strip(), f"a switch: true or false, not a number. Fix: {key}=true or {key}=false")
            )


def _nearest_keyword(node: DictConfig, key: str) -> list[str]:
    """The keywords of the node's ``_target_`` nearest ``key`` (peft's LoraConfig: use_doraa -> use_dora)."""
    return difflib.get_close_matches(key, sorted(target_keywords(node)), n=2, cutoff=0.8)


def check_arguments(cfg: DictConfig, section: str, target: Any, problems: list[Problem]) -> None:
    """A plug-in's model or data has no schema: its keys must be arguments of its ``_target_``."""
    node = select(cfg, section)
    if not isinstance(node, DictConfig) or is_dataclass(OmegaConf.get_type(node)):
        return  # schema'd: check_unknown_keys has it
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing to compare
        return
    _check_argument_types(node, section, parameters, problems)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    names = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    given = [str(k) for k in node.keys() if k not in HYDRA_KEYS]
    path = select(cfg, f"{section}._target_")
    for key in given:
        if key not in names:
            problems.append(
                Problem(
                    f"{section}.{key}",
                    select(node, key),
                    f"not an argument of {path}, so calling it would fail. Fix: drop it, or one of {', '.join(names)}.",
                )
            )
    for parameter in parameters:
        if parameter.name in names and parameter.default is inspect.Parameter.empty and parameter.name not in given:
            problems.append(
                Problem(f"{section}.{parameter.name}", None, f"{path} requires it. Fix: {section}.{parameter.name}=...")
            )


NUMBER_TYPES = {"int": (int,), "float": (int, float)}  # an annotation and the values that satisfy it


def _check_argument_types(node: DictConfig, section: str, parameters: Any, problems: list[Problem]) -> None:
    """A plug-in's argument annotated ``int`` or ``float`` given a word, a list, a fraction, a whole float
    (``16.0``, ``1e3``) or null on the command line (``data.n_examples=abc``): refused here naming the key, rather
    than as the TypeError the function meets somewhere inside (``'<' not supported between 'int' and 'str'``)."""
    path = select(node, "_target_")
    for parameter in parameters:
        annotation = parameter.annotation
        name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if name not in NUMBER_TYPES or parameter.name not in node:
            continue
        value = select(node, parameter.name)
        if value is None and parameter.default is None:  # 'n: int = None': None is what it takes by default
            continue
        if isinstance(value, NUMBER_TYPES[name]) and not isinstance(value, bool):
            continue
        whole = name == "int" and isinstance(value, float) and value.is_integer()  # 16.0: range() and numpy refuse it
        problems.append(
            Problem(
                f"{section}.{parameter.name}",
                value,
                f"{path} declares {parameter.name}: {name}. Fix: {'an integer' if name == 'int' else 'a number'}"
                + (f", {section}.{parameter.name}={int(value)}" if whole else "")
                + (
                    f" (its default is {parameter.default!r})"
                    if parameter.default is not inspect.Parameter.empty
                    else ""
                ),
            )
        )
