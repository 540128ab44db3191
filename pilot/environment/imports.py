"""The campaign's distributions' modules the pilot had imported when the environment step ran
(``loaded_modules``), and whether each still imports (``import_failures``, env_check on the rented
machine): a distribution installed at the locked version whose import is broken (a missing shared
library, a damaged file) passes every version comparison and fails the campaign at its first import."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys

from pilot.environment.distributions import Installed
from pilot.errors import error_line


def loaded_modules(campaign: dict[str, str], installed: dict[str, Installed] | None = None) -> dict[str, list[str]]:
    """{distribution: its top-level modules in sys.modules now}, for the campaign's distributions only
    (what this process has really imported, not every module a distribution ships: some need extras).
    A distribution's modules come from its top_level.txt, else from its file list (RECORD)."""
    loaded = {module.partition(".")[0] for module in list(sys.modules)}
    found: dict[str, list[str]] = {}
    for owner in campaign:
        names = set(installed[owner].top_level) if installed and owner in installed else set()
        names = names or _top_level_names(owner)
        if hits := sorted(name for name in names & loaded if not name.startswith("_")):
            found[owner] = hits
    return dict(sorted(found.items()))


def _top_level_names(distribution: str) -> set[str]:
    """The top-level packages and modules a distribution's RECORD lists."""
    try:
        files = metadata.distribution(distribution).files or []
    except metadata.PackageNotFoundError:
        return set()
    names = set()
    for file in files:
        first = file.parts[0] if file.parts else ""
        if first.endswith(".py"):
            names.add(first[:-3])
        elif first and "." not in first and len(file.parts) > 1:
            names.add(first)
    return names


def import_failures(recorded: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """{distribution: {module: 'Type: message'}} for each recorded module that does not import here."""
    failed: dict[str, dict[str, str]] = {}
    for owner, modules in recorded.items():
        for module in modules:
            if module in sys.modules:
                continue
            try:
                importlib.import_module(module)
            except Exception as error:  # noqa: BLE001 - what breaks an import is any error at all
                failed.setdefault(owner, {})[module] = error_line(error)
    return failed
