"""Where a plug-in's module lies when Python cannot import it: ``model._target_=my_task.MajorityNet``
with ``my_task.py`` in a folder not on ``PYTHONPATH`` (the README's plug-in example sets it). The folder is
looked for below the working directory (two levels), so the fix names the ``PYTHONPATH`` that imports it."""

from __future__ import annotations

import os
from pathlib import Path

MOST_FOLDERS = 2000  # folders looked into at most: a working directory holding a data set stays quick


def module_file(module: str, start: Path | None = None) -> Path | None:
    """``module``'s top-level file (``my_task.py``, ``my_task/__init__.py``) in the working directory or a
    folder at most two levels below it, or None."""
    top = module.split(".")[0]
    base = Path(start or os.getcwd())
    seen = 0
    level = [base]
    for _ in range(3):
        below = []
        for folder in level:
            seen += 1
            if seen > MOST_FOLDERS:
                return None
            found = [p for p in (folder / f"{top}.py", folder / top / "__init__.py") if p.is_file()]
            if found:
                return found[0]
            try:
                below += sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
            except OSError:
                continue
        level = below
    return None


def import_fix(error: ImportError) -> str:
    """The fix of a ``_target_`` whose module Python did not find: the PYTHONPATH that finds it, else ""."""
    name = getattr(error, "name", None)
    if not isinstance(error, ModuleNotFoundError) or not name:
        return ""
    found = module_file(name)
    if found is None:
        return ""
    folder = found.parent if found.name != "__init__.py" else found.parent.parent
    shown = os.path.relpath(folder) if folder != Path(os.getcwd()) else "."
    return (
        f"Fix: {found} is not on Python's path: "
        f"PYTHONPATH={shown} python -m pilot ... (or install the package that holds it)."
    )
