"""What a setting takes, and the line that says so when a value cannot be it (``wrong_type``): the
setting's type from the config's schema, its default, and the fix where one is known (a unit, Python's
None, a near name of an enum, a list meant, a run's directory given to ``checkpoint.resume``)."""

from __future__ import annotations

import copy
import difflib
import math
from enum import Enum
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from pilot.config.other_names import device_index
from pilot.config.units import unit_fix
from pilot.config.values import typed_value
from pilot.run_marker import enclosing_run, run_mode

KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def node_kind(cfg: DictConfig, key: str) -> str:
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


def wrong_type(cfg: DictConfig, key: str, value: object, typed: str | None = None) -> str | None:
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
        kind = KINDS.get(type(default)) or node_kind(cfg, key)
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
        return said if "Fix:" in said or "; " in said or ". " in said else said + _typed_fix(key, value, kind, default)
    return None


def _typed_fix(key: str, value: object, kind: str, default: object) -> str:
    """The fix of a value of the wrong type said without one: the whole numbers around a fraction given
    to an integer setting, else the setting's kind in the value's place and its default as the example."""
    if kind.startswith("an integer") and isinstance(value, float) and math.isfinite(value):
        if 0 < value < 1:  # 0 is no count (budget.value=0.4 was offered budget.value=0, then refused)
            return f". Fix: {key}=1 (a whole number)"
        return f". Fix: {key}={math.floor(value)} or {key}={math.ceil(value)} (a whole number)"
    return f". Fix: {kind}, e.g. {key}={typed_value(default)}"  # no <placeholder>: the shell reads '<' as a file


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
