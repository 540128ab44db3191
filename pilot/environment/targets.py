"""5. Every ``_target_`` of the config: the module's import, its file's sha256, the distribution it comes from."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.closing.provenance import sha256_of
from pilot.environment.distributions import Installed, canonical
from pilot.errors import error_line
from pilot.user_code import imported_packages


def _distributions_of(top: str, installed: dict[str, Installed]) -> list[str]:
    """Distributions that provide the top-level package ``top``: their top_level.txt (cheap) first,
    then importlib.metadata.packages_distributions (reads every RECORD: ~0.5 s) for the rest."""
    declared = [d.name for d in installed.values() if top in d.top_level]
    if declared:
        return declared
    return list(dict.fromkeys(metadata.packages_distributions().get(top, [])))


def _locate(target: str):
    """Import ``target`` as Hydra does: the longest importable module, then attributes; returns
    (object, the module that holds it)."""
    parts = target.split(".")
    module = importlib.import_module(parts[0])
    obj: Any = module
    for index in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[index])
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: index + 1]))
        if isinstance(obj, type(sys)):
            module = obj
    return obj, module


def config_targets(cfg: DictConfig) -> dict[str, Any]:
    """Every ``_target_`` of the config by its full key (``model._target_``), at any depth."""
    container = OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False)
    found: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                full = f"{prefix}.{key}" if prefix else str(key)
                if key == "_target_":
                    found[full] = value
                else:
                    walk(value, full)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{prefix}[{index}]")

    walk(container, "")
    return found


def target_facts(key: str, target: Any, installed: dict[str, Installed]) -> dict[str, Any]:
    """Import one target; its module's file and sha256; the distribution and version it comes from."""
    facts: dict[str, Any] = {"key": key, "target": target, "imports": False}
    if not isinstance(target, str) or "." not in target:
        facts["error"] = "not a dotted path (module.attribute)"
        return facts
    try:
        _, module = _locate(target)
    except Exception as error:  # ImportError, AttributeError, or the module's own crash at import
        facts["error"] = error_line(error)
        facts["module"], _, attribute = target.rpartition(".")
        try:  # the module imports and lacks the name: say that, not "does not import"
            importlib.import_module(facts["module"])
            facts["error"] = f"the module imports but has no attribute '{attribute}'"
        except Exception:  # the import itself fails: the error above says why
            pass
        return facts
    facts.update(imports=True, module=module.__name__)
    path = getattr(module, "__file__", None)
    if path:
        facts.update(file=str(path), sha256=sha256_of(Path(path)))
    top = module.__name__.split(".")[0]
    if top in sys.stdlib_module_names:
        facts["distribution"] = "standard library"
        return facts
    if path:  # what its module imports can change results as much as the module: a campaign dependency too
        facts["imported_distributions"] = sorted(
            {name for imported in imported_packages(Path(path), top) for name in _distributions_of(imported, installed)}
        )
    names = _distributions_of(top, installed)
    facts["distributions"] = [
        {
            "name": n,
            "version": installed[canonical(n)].version if canonical(n) in installed else None,
            "editable": installed[canonical(n)].editable if canonical(n) in installed else None,
        }
        for n in names
    ]
    if not names:
        facts["distribution"] = "none: imported from a directory on sys.path, not an installed distribution"
    return facts
