"""The campaign's distributions' modules the pilot had imported when the environment step ran
(``loaded_modules``), and whether each still imports (``import_failures``, env_check on the rented
machine): a distribution installed at the locked version whose import is broken (a missing shared
library, a damaged file) passes every version comparison and fails the campaign at its first import."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys

from pilot.environment.distributions import canonical
from pilot.errors import error_line


def loaded_modules(campaign: dict[str, str]) -> dict[str, list[str]]:
    """{distribution: its top-level modules in sys.modules now}, for the campaign's distributions only
    (what this process has really imported, not every module a distribution ships: some need extras)."""
    owners = metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for name in {module.partition(".")[0] for module in list(sys.modules)}:
        if name.startswith("_"):
            continue
        for owner in owners.get(name, []):
            if canonical(owner) in campaign:
                found.setdefault(canonical(owner), set()).add(name)
    return {owner: sorted(names) for owner, names in sorted(found.items())}


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
