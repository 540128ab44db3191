"""The exported config, treated as untrusted: it must equal a reference config (the parent's, or the run's
own checked against run.json) and name no target the reload refuses, before anything is built."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.closing.blocked_targets import code_running, resolves_to_code
from pilot.errors import PilotError, UnsafeFileError, error_line
from pilot.run_record import config_hash


class ExportConfigRefused(UnsafeFileError):
    """The exported config differs from its reference or names code the reload will not run."""


@dataclass(frozen=True)
class ReloadPolicy:
    """What the reload may instantiate: the reference config's targets, key by key, and the
    targets the user allowed at any key. ``reference`` is None when none could be trusted
    (``unverified`` says why): then only allowed targets pass."""

    reference: dict[str, Any] | None  # flattened reference config (full key -> value)
    source: str  # where the reference came from, for messages
    allowed_targets: frozenset[str] = frozenset()
    unverified: str | None = None


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a plain container by full key: ``model.hidden``, ``a.b[0]._target_``.
    A ``_target_`` is a leaf whatever it holds. Two leaves with one full key (a key named
    ``"model._target_"`` next to ``model: {_target_: ...}``) would hide one of them: refused."""
    if isinstance(node, dict) and node:
        children = [
            (f"{prefix}.{key}" if prefix else str(key), value, key == "_target_") for key, value in node.items()
        ]
    elif isinstance(node, list) and node:
        children = [(f"{prefix}[{index}]", item, False) for index, item in enumerate(node)]
    else:
        return {prefix: node}
    flat: dict[str, Any] = {}
    for full, value, is_leaf in children:
        for key, leaf in ({full: value} if is_leaf else flatten(value, full)).items():
            if key in flat:
                raise ExportConfigRefused(
                    f"two entries of the config are both named {key} (a key with a "
                    "dot or brackets in its name); refused"
                )
            flat[key] = leaf
    return flat


def is_target_key(key: str) -> bool:
    return key == "_target_" or key.endswith("._target_")


def _same(a: Any, b: Any) -> bool:
    return a == b or (a != a and b != b)  # NaN equals NaN here


def refusals(container: dict[str, Any], policy: ReloadPolicy) -> list[str]:
    """Every reason to refuse the exported config (empty: it may be instantiated). Imports
    nothing until every target is known to be allowed."""
    flat, problems = flatten(container), []
    reference = policy.reference
    for key, target in flat.items():
        if not is_target_key(key):
            continue
        blocked = code_running(target) if isinstance(target, str) else None
        expected = reference.get(key) if reference is not None else None
        if not isinstance(target, str):
            problems.append(f"{key} = {target!r}: not a dotted name")
        elif blocked:
            problems.append(
                f"{key} = {target}: {blocked} runs code or touches files; never instantiated, even when allowed"
            )
        elif target != expected and target not in policy.allowed_targets:
            why = (
                f"the reference has {expected or 'no _target_ there'}"
                if reference is not None
                else f"no reference to allow it ({policy.unverified})"
            )
            problems.append(f"{key} = {target}: {why}; pass --allow-target {target} if you trust it")
    if reference is not None:  # every other value must be the reference's too (closing.rtol included)
        absent = "<absent>"
        for key in sorted(set(flat) | set(reference)):
            if not (is_target_key(key) and key in flat) and not _same(
                flat.get(key, absent), reference.get(key, absent)
            ):
                problems.append(
                    f"{key}: {flat.get(key, absent)!r} here, {reference.get(key, absent)!r} in the reference"
                )
    if problems:
        return problems
    for key, target in flat.items():  # all allowed by name: now check what they resolve to
        if is_target_key(key):
            try:
                blocked = resolves_to_code(target)
            except Exception as error:  # ImportError, or an import that fails on its own
                problems.append(f"{key} = {target}: cannot be imported ({type(error).__name__}: {error})")
                continue
            if blocked:
                problems.append(
                    f"{key} = {target}: resolves to {blocked}, which runs code or touches "
                    "files; never instantiated, even when allowed"
                )
    return problems


def read_config(path: Path) -> dict[str, Any]:
    """A config file as a plain dict, without resolving anything: pilot writes its configs
    resolved, so an interpolation (``${oc.decode:...}`` could build a ``_target_``) is refused."""
    try:
        cfg = OmegaConf.load(path)
    except Exception as error:  # missing, not YAML, not an OmegaConf config
        raise PilotError(f"{path} cannot be read as a config: {error_line(error, 200)}") from None
    if not isinstance(cfg, DictConfig):
        raise ExportConfigRefused(f"{path} is not a mapping; refused")
    container = OmegaConf.to_container(cfg, resolve=False)
    interpolations = [
        f"{key} = {value!r}" for key, value in flatten(container).items() if isinstance(value, str) and "${" in value
    ]
    if interpolations:
        raise ExportConfigRefused(
            f"{path} holds interpolations, which pilot never writes (its configs are "
            f"saved resolved); refused, nothing was resolved: {'; '.join(interpolations)}"
        )
    return container


def load_export_config(directory: Path, policy: ReloadPolicy) -> DictConfig:
    """The export's config, once it passed every check; raises ``ExportConfigRefused`` otherwise."""
    path = Path(directory) / "config.yaml"
    container = read_config(path)
    problems = refusals(container, policy)
    if problems:
        compared = f"compared with {policy.source}" if policy.reference is not None else "no reference"
        raise ExportConfigRefused(
            f"{path} refused ({compared}); nothing was built or loaded:\n  - "
            + "\n  - ".join(problems)
            + "\nFix: restore the export from the run that wrote it; pass --allow-target MODULE.ATTR only "
            "for a target you trust (values that differ cannot be allowed)."
        )
    return OmegaConf.create(container)


def reference_policy(path: Path, allowed_targets: Sequence[str] = ()) -> ReloadPolicy:
    """A reference config the caller vouches for (the parent writes the run's own config)."""
    return ReloadPolicy(flatten(read_config(path)), f"reference {path}", frozenset(allowed_targets))


def run_policy(directory: Path, allowed_targets: Sequence[str] = ()) -> ReloadPolicy:
    """By hand: the run's ``config.yaml`` next to the export (``<run>/export`` or
    ``<run>/export/rank<r>``), trusted when it hashes to ``run.json``'s ``config_hash``; a pilot
    run keeps no ``config.yaml``, so there the export itself must hash to it."""
    directory, allowed = Path(directory).resolve(), frozenset(allowed_targets)
    run_dir = next((d for d in (directory.parent, directory.parent.parent) if (d / "run.json").exists()), None)
    if run_dir is None:
        return ReloadPolicy(
            None,
            "",
            allowed,
            f"no run.json in {directory.parent} or {directory.parent.parent} to check the export against",
        )
    try:
        record = json.loads((run_dir / "run.json").read_text())
        hashes = {record.get("config_hash")} | {r.get("config_hash") for r in record.get("resumes") or []}
    except (OSError, ValueError, AttributeError, TypeError) as error:
        return ReloadPolicy(None, "", allowed, f"{run_dir / 'run.json'} is unreadable ({type(error).__name__})")
    hashes.discard(None)
    config_path = run_dir / "config.yaml"
    checked = config_path if config_path.exists() else directory / "config.yaml"
    container = read_config(checked)
    actual = config_hash(OmegaConf.create(container))  # no interpolation left to resolve
    if actual in hashes:
        return ReloadPolicy(flatten(container), f"the run's {checked}", allowed)
    return ReloadPolicy(
        None,
        "",
        allowed,
        f"{checked} hashes to {actual}, not to run.json's config_hash "
        f"{record.get('config_hash')}: one of them was edited, or the run was "
        "resumed under other settings",
    )
