"""The code against the pilot's: every target's module and file, the installed distributions against the
lock, the code revision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot.closing.provenance import BESIDE_THE_PACKAGE
from pilot.env_check.compare_stack import public_version
from pilot.env_check.difference import Difference
from pilot.env_check.run_dir import PilotRun
from pilot.environment.distributions import Installed
from pilot.environment.imports import import_failures
from pilot.environment.targets import target_facts
from pilot.run_record import code_revision

SHOWN_EXTRAS = 8  # distributions only here: how many are named


def compare_targets(run: PilotRun, installed: dict[str, Installed]) -> list[Difference]:
    """Every target the pilot imported: imports here, and the same file (sha256)."""
    found = []
    for before in run.facts["targets"]:
        if not before.get("imports"):
            continue
        now = target_facts(before["key"], before["target"], installed)
        label = f"{before['key']}={before['target']}"
        if not now["imports"]:
            error = str(now.get("error"))
            found.append(
                Difference(
                    f"{label}: module {now.get('module')}",
                    "imports",
                    error if "has no attribute" in error else f"does not import ({error})",
                    f"the campaign cannot build it. Fix: {_import_fix(before)}",
                    True,
                )
            )
        elif before.get("sha256") and now.get("sha256") != before["sha256"]:
            found.append(
                Difference(
                    f"{label}: {now.get('file')}",
                    f"sha256 {before['sha256'][:12]}",
                    f"sha256 {str(now.get('sha256'))[:12]}",
                    "its code differs from the pilot's: results may differ",
                    True,
                )
            )
    return found


def _import_fix(before: dict[str, Any]) -> str:
    """How to make a target import here: the pilot's module came from a folder on its ``sys.path`` (a plug-in on
    PYTHONPATH, no installed package: that folder is named), else from an installed distribution."""
    file, module = before.get("file"), str(before.get("module") or "")
    if not file or before.get("distributions"):
        return "install what provides it"
    folder = Path(file).parent.parent if Path(file).name == "__init__.py" else Path(file).parent
    for _ in range(module.count(".")):
        folder = folder.parent
    return (
        f"the pilot imported it from {file}, in no installed package: put that code here and its folder on the "
        f"import path (PYTHONPATH={folder} python -m pilot.env_check ...), or install what provides it"
    )


def compare_distributions(run: PilotRun, installed: dict[str, Installed], campaign: dict[str, str]) -> list[Difference]:
    """The lock against what is installed; torch has its own line (compare_stack)."""
    found, extras = [], sorted(set(installed) - set(run.lock))
    for key, (name, version, _editable) in sorted(run.lock.items()):
        if key == "torch":
            continue
        severe = key in campaign
        affects = (
            "a dependency of the campaign: its code runs in every update"
            if severe
            else "not among the campaign's dependencies: does not change results"
        )
        now = installed.get(key)
        if now is None:
            found.append(Difference(f"distribution {name}", version, "not installed", affects, severe))
        elif public_version(now.version) != public_version(version):
            found.append(Difference(f"distribution {name}", version, now.version, affects, severe))
        elif now.version != version:
            found.append(
                Difference(
                    f"distribution {name}",
                    version,
                    now.version,
                    "another build of the same release (local version label)",
                    False,
                )
            )
    if extras:
        shown = ", ".join(f"{installed[k].name}=={installed[k].version}" for k in extras[:SHOWN_EXTRAS])
        more = f" (+{len(extras) - SHOWN_EXTRAS} more)" if len(extras) > SHOWN_EXTRAS else ""
        found.append(
            Difference(
                "distributions only here",
                "-",
                shown + more,
                "installed here, absent at the pilot: unused unless something imports them",
                False,
            )
        )
    return found


def compare_imports(recorded: dict[str, list[str]] | None, installed: dict[str, Installed]) -> list[Difference]:
    """Each module of the campaign's distributions the pilot had imported: imports here too (a broken
    install passes every version line). A run recorded before pilot kept them: nothing to compare."""
    found = []
    present = {owner: modules for owner, modules in (recorded or {}).items() if owner in installed}  # a missing
    for owner, failed in import_failures(present).items():  # one has its own line (compare_distributions)
        version, name = installed[owner].version, installed[owner].name
        for module, error in failed.items():
            found.append(
                Difference(
                    f"distribution {name}: module {module}",
                    "imports",
                    f"does not import ({error})",
                    f"the campaign imports it and fails here. Fix: pip install --force-reinstall {name}=={version}",
                    True,
                )
            )
    return found


SHOWN_FILES = 5  # pilot's own files that differ: how many are named


def compare_sources(before: dict[str, str] | None, now: dict[str, str]) -> list[Difference]:
    """pilot's own files (its training loop, loss, optimizer and checks run in every update), file by
    file; a run recorded before pilot kept them is said to be uncomparable."""
    if not before:
        return [
            Difference(
                "pilot's own files",
                "not recorded",
                f"{len(now)} files",
                "the pilot's run predates this record: compare the code revision instead",
                False,
            )
        ]
    unrecorded = [f"{folder}/" for folder in BESIDE_THE_PACKAGE if not any(n.startswith(f"{folder}/") for n in before)]
    now = {name: digest for name, digest in now.items() if not name.startswith(tuple(unrecorded))}  # an older pilot
    changed = sorted(name for name in set(before) | set(now) if before.get(name) != now.get(name))
    if not changed:
        return []
    shown = ", ".join(changed[:SHOWN_FILES]) + (
        f" (+{len(changed) - SHOWN_FILES} more)" if len(changed) > SHOWN_FILES else ""
    )
    return [
        Difference(
            "pilot's own files",
            f"{len(before)} files",
            f"{len(changed)} differ: {shown}",
            "the code of every update (training loop, loss, optimizer) may differ: results may differ",
            True,
        )
    ]


def compare_code(record: dict[str, Any]) -> list[Difference]:
    before = record.get("code_revision") or {}
    if not before.get("commit"):
        return []
    now = code_revision()
    if not now.get("commit"):
        return [
            Difference(
                "code revision",
                before["commit"][:12],
                "not a git checkout",
                "cannot compare the pilot's code (the target lines compare their files)",
                False,
            )
        ]
    if now["commit"] != before["commit"]:
        return [
            Difference(
                "code revision",
                before["commit"][:12],
                now["commit"][:12],
                "another commit of pilot: training code may differ",
                True,
            )
        ]
    if before.get("dirty") or now.get("dirty"):
        return [
            Difference(
                "uncommitted changes",
                "dirty" if before.get("dirty") else "clean",
                "dirty" if now.get("dirty") else "clean",
                "same commit with uncommitted edits: pilot's own files and the targets' are compared file by file",
                False,
            )
        ]
    return []
