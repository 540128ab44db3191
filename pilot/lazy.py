"""A package's names imported from their modules on first use (PEP 562's module ``__getattr__``): a
package that a process imports first must not load what that process may never need, or may not be
able to import (pandas for a single run; a dependency missing on a rented machine)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def attribute_getter(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``homes`` from its module, imported then."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__
