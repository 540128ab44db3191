"""The step's two files: ``environment.json`` (every fact, the requirements, the verdict) and
``requirements.lock`` (pip-freeze style); written here, read back by the choice sheet and env_check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pilot.environment.distributions import Installed, canonical
from pilot.environment.errors import LockUnreadable
from pilot.rental.requirements import Requirement

FACTS_FILE = "environment.json"
LOCK_FILE = "requirements.lock"


def lock_text(installed: dict[str, Installed], stack: dict[str, Any]) -> str:
    """pip-freeze style: ``name==version``, sorted; editable installs as a comment (no index has them)."""
    lines = [
        "# requirements.lock: the distributions installed when the pilot's environment step ran",
        "# (pip freeze style, read from importlib.metadata). Reinstall: pip install -r requirements.lock;",
        "# for a GPU machine after a CPU pilot, drop the torch==...+cpu line and install the same torch",
        "# release's GPU build (pip install torch==<release>); editable installs are comments: pip install -e.",
        f"# python {stack['python']['version']}; torch {stack['torch']['version']} ({stack['torch']['build']})",
    ]
    for key in sorted(installed):
        dist_ = installed[key]
        if dist_.editable:
            lines.append(f"# editable: {dist_.name}=={dist_.version} {dist_.editable}")
        else:
            lines.append(f"{dist_.name}=={dist_.version}")
    return "\n".join(lines) + "\n"


def read_lock(path: Path) -> dict[str, tuple[str, str, bool]]:
    """canonical name -> (name, version, editable) of a requirements.lock; a bad line is refused."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise LockUnreadable(
            f"{path} cannot be read ({type(error).__name__}: {error}). Fix: give the "
            "directory of a pilot run (it writes requirements.lock)."
        ) from None
    found: dict[str, tuple[str, str, bool]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        editable = line.startswith("# editable:")
        if editable:
            line = line[len("# editable:") :].strip().split()[0] if line[len("# editable:") :].strip() else ""
        elif not line or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        if not separator or not name.strip() or not version.strip():
            raise LockUnreadable(
                f"{path}, line {number}: {raw!r} is not 'name==version'. Fix: restore the "
                "file the pilot wrote, or edit that line."
            )
        found[canonical(name.strip())] = (name.strip(), version.strip(), editable)
    return found


def read_requirements(run_dir: Path) -> list[Requirement] | None:
    """The requirements the environment step recorded in ``run_dir`` (for the choice sheet); None when
    the directory holds no environment.json (mode=estimate, or a pilot from before the step)."""
    path = Path(run_dir) / FACTS_FILE
    if not path.is_file():
        return None
    try:
        recorded = json.loads(path.read_text()).get("requirements", [])
        return [Requirement(**entry) for entry in recorded]
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise LockUnreadable(
            f"{path}: its requirements cannot be read ({type(error).__name__}: {error}). "
            "Fix: restore the file the environment step wrote, or rerun the pilot."
        ) from None


def write_files(run_dir: Path, facts: dict[str, Any], installed: dict[str, Installed]) -> dict[str, Path]:
    """environment.json and requirements.lock into ``run_dir``; their paths."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = {"facts": run_dir / FACTS_FILE, "lock": run_dir / LOCK_FILE}
    paths["facts"].write_text(json.dumps(facts, indent=1, default=str) + "\n")
    paths["lock"].write_text(lock_text(installed, facts))
    return paths
