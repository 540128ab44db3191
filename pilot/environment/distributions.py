"""6. Every installed distribution (importlib.metadata, first found on sys.path wins) and the campaign's
dependencies: the closure of torch, pilot and the targets' distributions over their requirements."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PackageRequirement

ROOT_DISTRIBUTIONS = ("torch", "pilot")  # the campaign's dependencies start here and at its targets


@dataclass
class Installed:
    """One installed distribution, as importlib.metadata reads it."""

    name: str
    version: str
    top_level: list[str] = field(default_factory=list)
    editable: str | None = None  # the source URL of an editable install
    requires: list[str] = field(default_factory=list)


def canonical(name: str) -> str:
    """PEP 503 name: 'Hydra_Core' and 'hydra-core' are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions() -> dict[str, Installed]:
    """Every distribution on sys.path, first found wins (as pip freeze and the import system do)."""
    found: dict[str, Installed] = {}
    for distribution in metadata.distributions():
        meta = distribution.metadata
        name = meta["Name"]
        if not name or canonical(name) in found:
            continue
        editable = None
        direct = distribution.read_text("direct_url.json")
        if direct:
            try:
                info = json.loads(direct)
                editable = info.get("url") if info.get("dir_info", {}).get("editable") else None
            except json.JSONDecodeError:
                editable = None
        found[canonical(name)] = Installed(
            name,
            meta["Version"],  # what distribution.version reads, without parsing METADATA a second time (half the time)
            (distribution.read_text("top_level.txt") or "").split(),
            editable,
            meta.get_all("Requires-Dist") or [],
        )
    return found


def _requirement_names(requires: Iterable[str]) -> list[str]:
    """Names of the requirements that apply without extras on this platform."""
    names = []
    for line in requires:
        try:
            requirement = PackageRequirement(line)
        except InvalidRequirement:
            continue  # a malformed Requires-Dist line in someone's metadata: it names nothing installable
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(canonical(requirement.name))
    return names


def dependency_closure(roots: Iterable[str], installed: dict[str, Installed]) -> dict[str, str]:
    """The roots and everything they require, transitively: the distributions the campaign runs."""
    closure: dict[str, str] = {}
    pending = [canonical(r) for r in roots]
    while pending:
        name = pending.pop()
        if name in closure or name not in installed:
            continue
        closure[name] = installed[name].version
        pending += _requirement_names(installed[name].requires)
    return dict(sorted(closure.items()))
