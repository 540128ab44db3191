"""What the user probably meant, after Hydra refused the command line: the nearest setting for a key
the config does not have (Hydra's own advice, a ``+``, would add a key nothing reads) and the
nearest option of a config group. Computed only when Hydra has refused: it composes the default
config once more (a fraction of a second), never on a command line that works."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from enum import Enum
from functools import partial
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from pilot.config.grammar_fix import unreadable_arguments, valueless_keys
from pilot.config.group_choices import group_problem, searchpath_groups
from pilot.config.hydra_keys import hydra_setting_lines
from pilot.config.other_names import other_trainers_name
from pilot.config.setting_types import KINDS, node_kind, wrong_type
from pilot.config.values import target_keywords

HUB_FIX = "model=hf_causal_lm model.path=<its save_pretrained directory on this machine> (nothing is downloaded)"
HIDDEN_OPTIONS = "schema"  # the schema's own entries in a group (schema, schema_<option>: pilot.config.register)


def suggestions(
    conf_dir: str, arguments: list[str], known_elsewhere: Callable[[DictConfig, str, str], str | None] | None = None
) -> list[str]:
    """One line per command-line override that names a key the default config lacks, or an option
    its group lacks, with the nearest ones; [] when there is nothing to suggest or it cannot tell.
    ``known_elsewhere(cfg, key, argument)``: a line for a key the config lacks that is a real setting
    of what the config builds (a transformers config class's own key the YAML does not list)."""
    if valueless := valueless_keys(arguments):
        return valueless
    parser = OverridesParser.create()
    try:
        overrides = parser.parse_overrides([a for a in arguments if "=" in a or a.startswith("~")])
    except Exception:  # noqa: BLE001 - a line Hydra could not parse: which argument, and how to write it
        return unreadable_arguments(parser, arguments)
    try:
        with _composing(conf_dir, overrides) as (loader, groups, cfg):
            lines = []
            added = {o.key_or_group for o in overrides if o.is_add()}  # +experiment=x: the group is there
            for override in overrides:
                key = override.key_or_group
                said = group_problem(override, cfg, groups, added, partial(_options, loader), _values(override))
                if said := said or _added_over(override, key, cfg):  # '+' on a group or a setting, or none
                    lines.append(said)
                    continue
                if override.is_delete() and key in groups:
                    continue  # ~group: Hydra's own business (removes a group's choice)
                if override.is_delete() and not key.startswith("hydra"):
                    lines += [removed] if (removed := _removed_setting(cfg, key)) else []
                    continue
                if key.startswith("hydra."):
                    lines += hydra_setting_lines(override, overrides, _values(override))
                    continue
                if key == "hydra" or (override.is_add() and key not in groups):
                    continue
                values = _values(override)  # a sweep's each (-m optim.lr=1e-3,abc), else the one value
                if key in groups or key.startswith("hydra/"):
                    options = [o for o in _options(loader, key) if not o.startswith(HIDDEN_OPTIONS)]
                    lines += _no_such_options(key, values, options)
                elif key.split(".", 1)[0] in _uncomposed:
                    continue  # its option did not compose: its keys said against the default were false lines
                elif not _has(cfg, key):
                    elsewhere = known_elsewhere(cfg, key, override.input_line) if known_elsewhere else None
                    elsewhere = elsewhere or _in_another_option(loader, groups, key)
                    lines.append(elsewhere or _not_a_setting(cfg, key, override.input_line))
                else:
                    typed = None if override.is_sweep_override() else override.input_line.partition("=")[2]
                    lines += [wrong for value in values if (wrong := wrong_type(cfg, key, value, typed))][:1]
            return lines
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy: Hydra's own message already stands
        return []


def readings_that_fit(conf_dir: str, arguments: list[str], key: str, readings: dict[str, list]) -> list[str] | None:
    """Of ``readings`` (a name -> the values one reading of ``key``'s value gives: a sweep's each, a number
    with a decimal comma, one list, one text), those the setting takes as this line composes it; a text
    only where the setting is typed a string (a setting of any type takes any text: adapter.target_modules
    reads 'q_proj,v_proj' as one pattern). None when it cannot tell (no such setting, a line that does not
    compose); a config group's only reading is the sweep."""
    try:
        overrides = OverridesParser.create().parse_overrides([a for a in arguments if "=" in a or a.startswith("~")])
        with _composing(conf_dir, overrides) as (_, groups, cfg):
            if key in groups:  # one option per job (a list of options is refused: group_choices)
                return ["sweep"]
            if not _has(cfg, key):
                return None
            text_too = node_kind(cfg, key).startswith(KINDS[str])
            return [
                name
                for name, values in readings.items()
                if all(wrong_type(cfg, key, value) is None for value in values) and (name != "text" or text_too)
            ]
    except Exception:  # noqa: BLE001 - a courtesy: the line is refused with the readings unsorted
        return None


@contextmanager
def _composing(conf_dir: str, overrides: list) -> Iterator[tuple[Any, set[str], DictConfig]]:
    """Hydra's config loader, the config groups and the config as the line's group choices compose it."""
    GlobalHydra.instance().clear()
    _searchpath[:] = [o.input_line for o in overrides if o.key_or_group == "hydra.searchpath"]  # plug-in options
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            loader = GlobalHydra.instance().config_loader()
            groups = set(loader.list_groups("")) | searchpath_groups(overrides)
            yield loader, groups, _composed_with_choices(overrides, groups)
    finally:
        GlobalHydra.instance().clear()


_searchpath: list[str] = []  # the line's hydra.searchpath=[...]: a plug-in's options (model=my_model) are real
_uncomposed: set[str] = set()  # groups whose chosen option did not compose (``_composed_with_choices``)


def _compose(overrides: list[str]) -> DictConfig:
    return compose("config", overrides=[*_searchpath, *overrides])


def _options(loader, group: str) -> list[str]:
    return loader.get_group_options(group, config_name="config", overrides=list(_searchpath))


def _has(cfg: DictConfig, key: str) -> bool:
    """``key`` is in the config, a value still to give (``???``, which ``OmegaConf.select`` hides) included."""
    parent = OmegaConf.select(cfg, key.rsplit(".", 1)[0], default=None) if "." in key else cfg
    return isinstance(parent, DictConfig) and key.rsplit(".", 1)[-1] in parent.keys()


def _values(override) -> list:
    """The values an override gives: each of a sweep's listed ones (``a,b``, ``choice(a,b)``), the first of a
    range's (``range(1e0,3e0)`` gives floats), or the one; none for an interval (an optimiser's to sample)."""
    if not override.is_sweep_override():
        return [override.value()]
    if override.is_choice_sweep() or override.is_range_sweep():
        with suppress(ValueError, HydraException):  # range(0, 3, 0): the sweeper's line says it; glob(*): the
            return [*itertools.islice(override.sweep_iterator(), 100)]  # group's options, read by no loader here
    return []


def _composed_with_choices(overrides: list, groups: set[str]) -> DictConfig:
    """The config as this line's group choices make it (``model=hf_causal_lm`` has ``model.config``),
    else the default one (a choice that does not exist is one of the lines said)."""
    chosen = [
        o.input_line
        for o in overrides
        if o.input_line
        and (o.key_or_group in groups or o.key_or_group == "experiment")
        and not o.is_sweep_override()
        and not o.is_delete()
        and not (o.key_or_group == "hydra" or o.key_or_group.startswith("hydra/"))
    ]
    _uncomposed.clear()
    try:
        cfg = _compose(chosen)
    except Exception:  # noqa: BLE001 - a choice that does not exist, or a YAML of yours Hydra refused: the others
        composing = []
        for line in chosen:
            try:
                _compose([*composing, line])
                composing.append(line)
            except Exception:  # noqa: BLE001 - its keys are not judged against another option's (Hydra's message stands)
                _uncomposed.add(line.split("=", 1)[0].lstrip("+"))
        return _compose(composing)
    # then the settings the line sets that this config has (model.model_type=gemma), not the refused ones
    settings = [
        o.input_line
        for o in overrides
        if o.input_line not in chosen
        and not o.is_sweep_override()
        and not o.is_add()
        and not o.is_delete()
        and not o.key_or_group.startswith("hydra")
        and _has(cfg, o.key_or_group)
    ]
    try:
        return _compose(chosen + settings) if settings else cfg
    except Exception:  # noqa: BLE001 - one of them is refused too: each is said on its own line
        return cfg


def _added_over(override: Any, key: str, cfg: DictConfig) -> str | None:
    """``+optim.lr=1`` where the setting is there: '+' adds what the config does not have (Hydra's refusal,
    several lines, said '++' too)."""
    if override.input_line.startswith("+") and not override.input_line.startswith("++") and _has(cfg, key):
        value = override.input_line.partition("=")[2]
        return f"{override.input_line}: {key} is already a setting, and '+' adds one the config does not have. Fix: {key}={value}"
    return None


_MISSING = object()


def _no_such_options(key: str, values: list, options: list[str]) -> list[str]:
    """Each value of a group's override that is none of its options (``+experiment=[a,nope]``: each one), with
    the nearest; a Hub name given as the model (meta-llama/Llama-2-7b-hf, never downloaded): how to load one."""
    each = [str(x) for v in values for x in (v if isinstance(v, list) else [v])]
    lines = []
    for value in [v for v in each if options and v not in options]:
        said = _nearest(f"{key}={value}: no such option", value, options, "options")
        lines.append(said + (f". A Hugging Face model: {HUB_FIX}" if key == "model" and "/" in value else ""))
    return lines


def _nearest(what: str, given: str, known: list[str], kind: str) -> str:
    lowered = {k.lower(): k for k in known}  # TINY_GPT is tiny_gpt
    near = [lowered[k] for k in difflib.get_close_matches(given.lower(), list(lowered), n=3, cutoff=0.6)]
    if near:
        return f"{what}; did you mean {' or '.join(near)}?"
    return f"{what}; the {kind}: {', '.join(sorted(known)[:40])}"


def _in_another_option(loader, groups: set[str], key: str) -> str | None:
    """``adapter.r=8`` with adapter=none: a setting of another option of its group (adapter=lora), named
    with the choice that brings it."""
    group = key.split(".", 1)[0]
    if group not in groups or "." not in key:
        return None
    having = []
    for option in _options(loader, group):
        if option.startswith(HIDDEN_OPTIONS):
            continue
        try:
            composed = _compose([f"{group}={option}"])
        except Exception:  # noqa: BLE001 - an option that does not compose alone: not suggested
            continue
        if _has(composed, key):  # a value still to give (data.tokenizer: ???) is a setting of that option too
            having.append(option)
    if not having:
        return None
    choices = " or ".join(f"{group}={option}" for option in having)
    return f"{key}: not a setting of this {group}; it is one of {choices}. Fix: choose it as well ({choices} {key}=...)"


def _removed_setting(cfg: DictConfig, key: str) -> str | None:
    """``~key`` of a setting pilot's schema types (its parent a structured node): every run reads it, so it
    cannot be removed; a key of a free-form node (``model.config``, a plug-in's YAML) may be."""
    parent = OmegaConf.select(cfg, key.rsplit(".", 1)[0], default=None) if "." in key else cfg
    value = OmegaConf.select(cfg, key, default=_MISSING)
    if value is _MISSING or not isinstance(parent, DictConfig) or OmegaConf.get_type(parent) in (dict, None):
        return None
    if isinstance(value, DictConfig):
        return (
            f"~{key}: the section {key} holds settings pilot reads on every run, so it cannot be removed. Fix: set "
            f"the one you mean ({key}.<setting>=<value>: {', '.join(str(k) for k in value.keys())})"
        )
    shown = value.name if isinstance(value, Enum) else value
    return (
        f"~{key}: {key} is a setting pilot reads on every run, so it cannot be removed. Fix: set it instead "
        f"({key}=<value>; now {key}={shown})"
    )


def _not_a_setting(cfg: DictConfig, key: str, line: str | None = None) -> str:
    """The nearest settings to a key the config lacks: among its section's first, else anywhere;
    with none near, the section's own settings (not every setting of the config)."""
    if alias := other_trainers_name(key, line):
        return alias
    if "/" in key and _has(cfg, dotted := key.replace("/", ".")):  # optim/lr=1e-3: a group's path, not a key's
        value = line.split("=", 1)[1] if line and "=" in line else "<value>"
        return f"{key}: not a setting; a setting's path is written with dots. Fix: {dotted}={value}"
    if "." not in key:  # micro_batch=4: a setting's own name without its section (batch), not the section
        leaves = [k for k in _keys(cfg) if k.rsplit(".", 1)[-1] == key]
        if 0 < len(leaves) <= 3:
            value = f"={line.split('=', 1)[1]}" if line and "=" in line else ""
            return f"{key}: not a setting; did you mean {' or '.join(leaf + value for leaf in leaves)}?"
        return _nearest(f"{key}: not a setting", key, [str(k) for k in cfg.keys()], "sections")
    section = key.rsplit(".", 1)[0]
    while section and not isinstance(OmegaConf.select(cfg, section, default=None), DictConfig):
        section = section.rsplit(".", 1)[0] if "." in section else ""
    node = OmegaConf.select(cfg, section, default=None) if section else None
    if node is not None and key.rsplit(".", 1)[-1] in target_keywords(node):
        return (
            f"{key}: not in this config, but {node._target_} reads it. Fix: add it with "
            f"+{line or key + '=<value>'} (a '+' adds a key the config does not set)"
        )
    everything = list(_keys(cfg))
    siblings = [k for k in everything if k.startswith(f"{section}.")] if section else everything
    near = difflib.get_close_matches(key, siblings, n=3, cutoff=0.6) or difflib.get_close_matches(
        key, everything, n=3, cutoff=0.6
    )
    if near:
        return f"{key}: not a setting; did you mean {' or '.join(near)}?"
    if not section:  # trian.epochs: the section itself is no section's name
        first = key.split(".", 1)[0]
        return _nearest(
            f"{key}: not a setting ({first} is no section)", first, [str(k) for k in cfg.keys()], "sections"
        )
    where = f"{section} has" if section else "the settings:"
    return f"{key}: not a setting; {where} {', '.join(sorted(siblings)[:40])}"


def _keys(node: DictConfig, prefix: str = "") -> Iterator[str]:
    for key in node.keys():
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            yield from _keys(child, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"
