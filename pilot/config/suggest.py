"""What the user probably meant, after Hydra refused the command line: the nearest setting for a key
the config does not have (Hydra's own advice, a ``+``, would add a key nothing reads) and the
nearest option of a config group. Computed only when Hydra has refused: it composes the default
config once more (a fraction of a second), never on a command line that works."""

from __future__ import annotations

import copy
import difflib
import itertools
from collections.abc import Callable, Iterator
from contextlib import suppress
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf

from pilot.config.grammar_fix import unreadable_arguments, valueless_keys
from pilot.config.group_choices import group_problem, searchpath_groups
from pilot.config.hydra_keys import hydra_setting_lines
from pilot.config.other_names import device_index, other_trainers_name
from pilot.config.units import unit_fix
from pilot.config.values import target_keywords, typed_value
from pilot.run_marker import enclosing_run, run_mode

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
    GlobalHydra.instance().clear()
    _searchpath[:] = [o.input_line for o in overrides if o.key_or_group == "hydra.searchpath"]  # plug-in options
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            loader = GlobalHydra.instance().config_loader()
            groups = set(loader.list_groups("")) | searchpath_groups(overrides)
            cfg = _composed_with_choices(overrides, groups)
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
                    lines += [wrong for value in values if (wrong := _wrong_type(cfg, key, value, typed))][:1]
            return lines
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy: Hydra's own message already stands
        return []
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
KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _node_kind(cfg: DictConfig, key: str) -> str:
    """What a setting whose value is null takes, from its schema's node (estimate.seq_len: an integer or null)."""
    from omegaconf import nodes

    section, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, section, default=None) if section else cfg
    try:
        node = parent._get_node(leaf, throw_on_missing_value=False)  # noqa: SLF001 - OmegaConf's typed node
    except Exception:  # noqa: BLE001 - no node to read a type from: said as the schema's type
        node = None
    typed = {nodes.IntegerNode: int, nodes.FloatNode: float, nodes.BooleanNode: bool, nodes.StringNode: str}
    kind = next((KINDS[python] for node_type, python in typed.items() if isinstance(node, node_type)), None)
    kind = kind or ("a list" if isinstance(node, ListConfig) else None)  # adapter.modules_to_save: [lm_head]
    return f"{kind} or null" if kind else "value of its schema's type"


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


SAME_MEANING = {
    "gpu": "cuda",
    "nvidia": "cuda",
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float": "fp32",
    "steps": "updates",  # budget.fixed: an optimizer step is an update
    "step": "updates",
    "iterations": "updates",
    "iters": "updates",
    "samples": "examples",
    "epoch": "epochs",
}


def _wrong_type(cfg: DictConfig, key: str, value: object, typed: str | None = None) -> str | None:
    """``key=value`` when the value cannot be the setting's type: what the setting takes, and its default
    (``typed``: the value as the line wrote it, 1e6 rather than 1000000.0)."""
    node = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
    if isinstance(node, DictConfig):
        return None
    if isinstance(node, ListConfig):
        return _wrong_list(cfg, key, value, node)
    # the key's section, typed by its schema (a top-level setting's type is its parent's: the whole config)
    trial = OmegaConf.masked_copy(cfg, [key.split(".")[0]]) if "." in key else copy.deepcopy(cfg)
    try:
        OmegaConf.update(trial, key, value, merge=False)
    except Exception:  # noqa: BLE001 - the schema refused the value's type
        default = OmegaConf.select(cfg, key)
        if isinstance(default, Enum):  # the names a user types, not Python's OptimName.adamw
            names = [member.name for member in type(default)]
            near = [SAME_MEANING[str(value).lower()]] if SAME_MEANING.get(str(value).lower()) in names else []
            near = near or [n for n in names if str(value).lower().startswith(n)][:1]  # cosine_with_restarts
            near = near or difflib.get_close_matches(str(value), names, n=1, cutoff=0.5)
            if chosen := device_index(key, str(value)):  # cuda:1
                return f"{key}={typed_value(value)}: {key} takes one of {', '.join(names)}; {chosen}"
            return f"{key}={typed_value(value)}: {key} takes one of {', '.join(names)}" + (
                f"; did you mean {key}={near[0]}?" if near else f" (the default is {key}={default.name})"
            )
        kind = KINDS.get(type(default)) or _node_kind(cfg, key)
        shown = typed if typed is not None else typed_value(value)
        said = f"{key}={shown}: {key} takes {kind} (the default is {key}={typed_value(default)})"
        whole = type(default) is int and isinstance(value, float) and value.is_integer()  # 1e12 or 2e5: a float
        if whole:  # what was read, not a fix: the integer may be out of the setting's range, said next
            said += f"; {shown} is a float (an exponent, 1e3, makes one): as an integer it is {int(value)}"
        if isinstance(value, str) and (fix := unit_fix(key, value, kind.startswith("an integer"))):
            said += f". Fix: {fix}"
        if kind.endswith("or null") and str(value).strip().lower() in ("none", "nil"):  # Python's None, typed
            said += f". Fix: {key}=null (the command line's and YAML's word for none)"
        elif kind == "a list or null" and isinstance(value, (str, int, float)):
            said += f"; as a list: {key}=[{value}]"
        if isinstance(value, (list, tuple)) and value:  # one run per value is a sweep, not a list
            as_typed = [
                int(v) if type(default) is int and isinstance(v, float) and v.is_integer() else v for v in value
            ]
            said += f"; to run one job per value, sweep it: {key}={','.join(map(str, as_typed))} -m"
        if key == "checkpoint.resume" and isinstance(value, str) and "/" in value:  # a run's directory
            said += resume_in_place(value)
        return said
    return None


def _wrong_list(cfg: DictConfig, key: str, value: object, node: ListConfig) -> str | None:
    """``key=value`` when a list setting cannot take it: what its items are, written as a list."""
    trial = OmegaConf.masked_copy(cfg, [key.split(".")[0]]) if "." in key else copy.deepcopy(cfg)
    try:
        OmegaConf.update(trial, key, value, merge=False)
    except Exception:  # noqa: BLE001 - the schema refused the value or one of its items
        item = KINDS.get(node._metadata.element_type)
        default = ",".join(str(v) for v in OmegaConf.to_container(node))
        given = "[" + ",".join(map(str, value)) + "]" if isinstance(value, list) else value  # as it was typed
        text = isinstance(value, str) and value.strip().startswith("[")  # '[0.9,0.95]' in Hydra's quotes: a string
        return (
            f"{key}={given}: {key} takes a list"
            + (f" of {item.split(' ', 1)[1]}s" if item else "")
            + (f", written [a,b,...] (the default is {key}=[{default}])")
            + (
                f"; Hydra's quotes made {value} one text. Fix: \"{key}={value.strip()}\" (the shell's quotes only)"
                if text
                else ""
            )
        )
    return None


def _keys(node: DictConfig, prefix: str = "") -> Iterator[str]:
    for key in node.keys():
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            yield from _keys(child, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def resume_in_place(given: str) -> str:
    """``checkpoint.resume=<a directory>`` (other trainers take the checkpoint's path there): the run to continue,
    which resumes in its own directory: the run holding ``given`` (its checkpoints/ too), said when it is no
    training run (a pilot's or an estimate's has nothing to continue) or when there is none."""
    run = enclosing_run(Path(given).expanduser())
    if run is None:
        return f". No pilot run holds {given} (no run.json at or above it): a run resumes in its own directory"
    if (mode := run_mode(run)) not in (None, "train"):
        return f". {run} holds a mode={mode} run, which trains nothing to continue: a train run resumes in its own directory"
    return f". To continue the run there: hydra.run.dir={run} (a run resumes in its own directory)"
