"""Variant identity, in one place: which settings define what a run trains, the variant key a
run is recorded under, whether a variant is the campaign's control, and the jobs a sweep
declaration expands to. run.json, checkpoints (the config hash), the recap and the campaign
plan all ask this module, so a setting cannot define a run in one of them and not in another."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable
from enum import Enum
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

# settings that never change what is trained: a resume ignores them, and so does the variant key.
# Each is a whole key or a section: "mode" matches "mode" alone, never "model.d_model".
NOT_DEFINING = (
    "run",
    "pilot",
    "checkpoint",
    "closing",
    "campaign",
    "estimate",
    "rental",
    "mode",
    "distributed.master_port",
    "hydra",
)
DEFINING_EXCLUDED = {"seed"}  # the variant key also leaves these out: seeds repeat a variant


def is_defining(key: str) -> bool:
    """Whether a (dotted) config key changes what a run trains."""
    return not any(key == section or key.startswith(section + ".") for section in NOT_DEFINING)


def override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def variant_key(overrides: Iterable[str], cfg: DictConfig | None = None) -> str:
    """Stable key of the overrides that define a variant.

    Seed, hydra.* and settings that do not change the experiment (run.*, pilot.*,
    checkpoint.*, closing.*, campaign.*, mode) are left out. With ``cfg``, a value is
    written as resolved, so ``optim.lr=2e-4`` and ``optim.lr=0.0002`` are one variant.
    """
    kept = {}  # key -> its entry: a key given twice counts once, with the value Hydra applied (the last)
    for override in overrides:
        key = override_key(override)
        if key in DEFINING_EXCLUDED or not is_defining(key):
            continue
        value = OmegaConf.select(cfg, key, default=None) if cfg is not None and "." in key else None
        value = value.name if isinstance(value, Enum) else value  # as typed (constant), not Schedule.constant
        if isinstance(value, (int, float, str, bool)) and not isinstance(value, DictConfig):
            kept[key] = f"{key}={value}"
        else:
            kept[key] = override.lstrip("+~")
    return ",".join(sorted(kept.values())) or "default"


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``key=value`` overrides (or a variant key split at commas) as {key: value}."""
    values = {}
    for override in overrides or []:
        if "=" in override:
            key, value = override.split("=", 1)
            values[key.strip().lstrip("+~")] = value.strip()
    return values


def same_value(a: str, b: str) -> bool:
    if {a.lower(), b.lower()} <= {"true", "false"}:  # Hydra writes a swept boolean True/False
        return a.lower() == b.lower()
    try:
        return float(a) == float(b)  # 1e-4 and 0.0001 are one value
    except ValueError:
        return a == b


def matches(variant: str, control: str) -> bool:
    """Does the variant key hold every override of the control (values compared as numbers)?"""
    wanted = parse_overrides(c.strip() for c in control.split(",") if c.strip())
    have = parse_overrides(str(variant).split(","))
    return bool(wanted) and all(k in have and same_value(have[k], v) for k, v in wanted.items())


def control_written_wrong(control: str) -> str | None:
    """What makes ``control`` no control whatever the runs are, or None: text that is not
    ``key=value``, or a key that defines no variant (a seed, run.*, checkpoint.*, ...)."""
    parts = [part.strip() for part in control.split(",") if part.strip()]
    if not parts:
        return None if not control.strip() else f"{control!r} names no key=value (e.g. optim.lr=0.0001)"
    malformed = [part for part in parts if "=" not in part or not part.split("=", 1)[0].strip()]
    if malformed:
        return f"{', '.join(malformed)} is not key=value (e.g. optim.lr=0.0001)"
    keys = [part.split("=", 1)[0].strip().lstrip("+~") for part in parts]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:  # the last value would win: a control of one value, named by two
        return f"{', '.join(twice)} is given twice; a control is one variant: one value per key (e.g. {parts[0]})"
    for key in parse_overrides(parts):
        if key in DEFINING_EXCLUDED or not is_defining(key):
            return (
                f"{key} does not define a variant (seeds repeat one; run.*, checkpoint.*, ... change nothing trained)"
            )
    return None


def control_problem(control: str, variants: Iterable[str]) -> str | None:
    """Why nothing can be compared with ``control`` among ``variants`` (variant keys), or None. Besides
    ``control_written_wrong``: it is none of them (naming the key no variant sets, with the nearest
    one, or the value no variant has, with those they have), or every one of several (nothing left
    to compare). A control matching some variants of a grid (one per other setting) is their control."""
    if not control.strip() or (wrong := control_written_wrong(control)):
        return wrong if control.strip() else None
    variants = sorted({str(v) for v in variants})
    matching = [variant for variant in variants if matches(variant, control)]
    if len(variants) > 1 and len(matching) == len(variants):
        return f"it matches every one of the {len(variants)} variants: nothing is left to compare with it"
    if matching:
        return None
    seen: dict[str, set[str]] = {}
    for variant in variants:
        for key, value in parse_overrides(variant.split(",")).items():
            seen.setdefault(key, set()).add(value)
    for key, value in parse_overrides(part.strip() for part in control.split(",") if part.strip()).items():
        if key not in seen:
            near = [k for k in seen if k.endswith(f".{key}")] or difflib.get_close_matches(key, list(seen), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            return f"no variant sets {key}{hint}; the variants set: {', '.join(sorted(seen)) or 'nothing (default)'}"
        if not any(same_value(have, value) for have in seen[key]):
            return f"no variant has {key}={value}; its values: {', '.join(sorted(seen[key]))}"
    return f"no variant holds all of {control}; the variants: {'; '.join(variants)}"


def sweep_combinations(params: dict[str, str]) -> list[list[str]]:
    """The jobs a sweep declaration (``hydra.sweeper.params``) expands to, as Hydra's basic
    sweeper expands them: one list of ``key=value`` overrides per job, in Hydra's order."""
    parser = OverridesParser.create()
    axes = []
    for key, value in params.items():
        override = parser.parse_overrides([f"{key}={value}"])[0]
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        axes.append([f"{key}={v}" for v in values])
    return [list(combo) for combo in itertools.product(*axes)] if axes else [[]]


def defining_config(cfg: DictConfig) -> dict[str, Any]:
    """Flattened resolved config without the keys that do not define the run."""
    return {k: v for k, v in flat_config(cfg).items() if is_defining(k)}


def flat_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as dotted key -> value, Hydra's own node left out."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = node

    if isinstance(cfg, DictConfig) and "hydra" in cfg:  # Hydra's own node defines no run, and before the
        cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])  # job starts it cannot resolve
    walk(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), "")
    return flat
