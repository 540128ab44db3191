"""An index of the runs under one root (``campaign.run_root``, ``campaign.sweep_root``), so that
finding a relaunch's parent reads one file instead of every run.json of the campaign.

``<root>/.pilot_runs.jsonl`` holds one line per run (path relative to the root, run_id,
variant, seed, mode, started_at), appended by the run itself when its run.json is first
written, under an exclusive ``flock`` so concurrent jobs never interleave lines. It is never
trusted over the run directories: a missing or unreadable index is rebuilt from them, and the
run the index names as parent is checked against its own run.json; when that disagrees (a run
deleted or moved) the index is rebuilt and the search made again. A run directory copied in by
hand is seen once the index is rebuilt (delete the file).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

INDEX_NAME = ".pilot_runs.jsonl"
ENTRY_KEYS = ("run_id", "variant", "seed", "mode", "started_at")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _entry(root: Path, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    return {"path": os.path.relpath(run_dir, root), **{key: record.get(key) for key in ENTRY_KEYS}}


def _locked_write(index: Path, text: str, replace: bool = False) -> None:
    """Append ``text`` (or replace the whole file) holding the index's exclusive lock."""
    with index.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if replace:
                handle.truncate(0)
            handle.write(text)
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def rebuild(root: Path) -> list[dict[str, Any]]:
    """Scan the run directories under ``root`` and write the index anew; its entries."""
    entries = []
    for path in sorted(root.glob("**/run.json")):
        record = _read_json(path)
        if record is not None:
            entries.append(_entry(root, path.parent, record))
    _locked_write(root / INDEX_NAME, "".join(json.dumps(entry) + "\n" for entry in entries), replace=True)
    return entries


def entries(root: Path, containing: str = "") -> list[dict[str, Any]]:
    """The index's entries (rebuilt from the run directories when the file is missing or
    unreadable); with ``containing``, only lines holding that text are parsed (pilot writes the
    lines, so a variant appears in its line exactly as ``json.dumps`` writes it)."""
    index = root / INDEX_NAME
    if not index.is_file():
        return rebuild(root)
    found = []
    try:
        lines = index.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return rebuild(root)
    for line in lines:
        if containing not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill: that run is checked again at the next rebuild
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            found.append(entry)
    return found


def add(roots: Iterable[Path], run_dir: Path, record: dict[str, Any]) -> None:
    """Append the new run to the index of the root it lives under (if any and if indexed)."""
    run_dir = Path(run_dir).resolve()
    for root in roots:
        root = Path(root).resolve()
        if root in run_dir.parents and (root / INDEX_NAME).is_file():
            _locked_write(root / INDEX_NAME, json.dumps(_entry(root, run_dir, record)) + "\n")


def _newest(candidates: list[tuple[Path, dict]], variant: str, seed: int, exclude_under: Path | None):
    best = None
    excluded = Path(exclude_under).resolve() if exclude_under is not None else None
    for root, entry in candidates:
        if entry.get("variant") != variant or entry.get("seed") != seed or entry.get("mode") == "pilot":
            continue
        run_dir = (root / entry["path"]).resolve()  # only for this variant and seed: a few paths
        if excluded is not None and excluded in run_dir.parents:
            continue  # jobs of the same sweep are siblings, not relaunches
        stamp = (str(entry.get("started_at") or ""), str(entry.get("run_id") or ""))
        if best is None or stamp > best[0]:
            best = (stamp, run_dir, entry)
    return best


def find_parent(roots: Iterable[Path], variant: str, seed: int, exclude_under: Path | None) -> str | None:
    """The newest earlier run of the same variant and seed (by started_at, then run_id): the run
    a relaunch relaunches. Read from the roots' indexes, checked against the chosen run.json."""
    roots = [Path(root) for root in roots if Path(root).is_dir()]
    for attempt in range(2):
        needle = f'"variant": {json.dumps(variant)}'
        candidates = [
            (root, entry) for root in roots for entry in (entries(root, needle) if attempt == 0 else rebuild(root))
        ]
        best = _newest(candidates, variant, seed, exclude_under)
        if best is None:
            return None
        record = _read_json(best[1] / "run.json") or {}
        if all(record.get(key) == best[2].get(key) for key in ("run_id", "variant", "seed")):
            return best[2].get("run_id")
    return None  # the index disagreed with the run directories even after a rebuild: no parent claimed
