"""An index of the runs under one root (``campaign.run_root``, ``campaign.sweep_root``), so that
finding a relaunch's parent reads one file instead of every run.json of the campaign.

``<root>/.pilot_runs.jsonl`` holds one line per run (path relative to the root, run_id,
variant, seed, mode, started_at), appended by the run itself when its run.json is first
written, under an exclusive ``flock`` so concurrent jobs never interleave lines; beside it,
``.pilot_runs.size`` holds the index's size in bytes as pilot last wrote it. It is never trusted
over the run directories: an index that is missing, unreadable, or not the size pilot wrote (emptied,
cut short, cut in the middle of an append, edited) is rebuilt from them, and the run the index names
as parent is checked against its own run.json; when that disagrees (a run deleted or moved) the
index is rebuilt and the search made again. An index that cannot be written (a directory in its
place, a read-only root) is left as it is: the run directories are read instead, and the run goes
on. A run directory copied in by hand is seen once the index is rebuilt (delete the file).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

INDEX_NAME = ".pilot_runs.jsonl"
SIZE_NAME = ".pilot_runs.size"  # the index's size as pilot last wrote it
ENTRY_KEYS = ("run_id", "variant", "seed", "mode", "started_at")
NOT_PARENTS = ("pilot", "estimate")  # modes that train nothing: never a relaunch's parent

log = logging.getLogger("pilot")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _entry(root: Path, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    return {"path": os.path.relpath(run_dir, root), **{key: record.get(key) for key in ENTRY_KEYS}}


def _recorded_size(root: Path) -> int | None:
    try:
        return int((root / SIZE_NAME).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _record_size(root: Path, size: int) -> None:
    """The index's size (written in place, holding the index's lock: no new entry in the root)."""
    with (root / SIZE_NAME).open("a") as handle:
        handle.truncate(0)
        handle.write(str(size))


def _locked_write(index: Path, text: str, replace: bool = False) -> None:
    """Append ``text`` (or replace the whole file) holding the index's exclusive lock; the size file
    follows, unless the index was already not the size pilot wrote (then the next search rebuilds it)."""
    with index.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            as_written = replace or _recorded_size(index.parent) == os.fstat(handle.fileno()).st_size
            if replace:
                handle.truncate(0)
            handle.write(text)
            handle.flush()
            if as_written:
                _record_size(index.parent, os.fstat(handle.fileno()).st_size)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _scanned(root: Path) -> list[dict[str, Any]]:
    entries = []
    for path in sorted(root.glob("**/run.json")):
        record = _read_json(path)
        if record is not None:
            entries.append(_entry(root, path.parent, record))
    return entries


def rebuild(root: Path) -> list[dict[str, Any]]:
    """Scan the run directories under ``root`` and write the index anew (when it can be written:
    otherwise said once and left as it is); its entries."""
    entries = _scanned(root)
    try:
        _locked_write(root / INDEX_NAME, "".join(json.dumps(entry) + "\n" for entry in entries), replace=True)
    except OSError as error:
        _cannot_write(root, error)
    return entries


_said: set[Path] = set()


def _cannot_write(root: Path, error: OSError) -> None:
    if root not in _said:
        _said.add(root)
        log.warning(
            "the run index %s cannot be written (%s): the run directories are read instead (slower at "
            "thousands of runs). Fix: remove or repair it; pilot writes it anew.",
            error.filename or root / INDEX_NAME,  # the index, or the size file beside it
            error.strerror or error,
        )


def _index_text(root: Path) -> str | None:
    """The index's text when it is the size pilot last wrote (read holding its lock); else None."""
    with contextlib.suppress(OSError, UnicodeDecodeError), (root / INDEX_NAME).open("rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            data = handle.read()
            if _recorded_size(root) == len(data):
                return data.decode()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def entries(root: Path, containing: str = "") -> list[dict[str, Any]]:
    """The index's entries (rebuilt from the run directories when the file is missing, unreadable or
    not as pilot wrote it); with ``containing``, only lines holding that text are parsed (pilot writes the
    lines, so a variant appears in its line exactly as ``json.dumps`` writes it)."""
    text = _index_text(root)
    if text is None:
        return rebuild(root)
    found = []
    for line in text.splitlines():
        if containing not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            return rebuild(root)  # not as pilot writes its lines
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            found.append(entry)
    return found


def add(roots: Iterable[Path], run_dir: Path, record: dict[str, Any]) -> None:
    """Append the new run to the index of the root it lives under (if any and if indexed); an index
    that cannot be appended to is said, and its size file removed so that the next search rebuilds it:
    the run goes on."""
    run_dir = Path(run_dir).resolve()
    for root in roots:
        root = Path(root).resolve()
        if root in run_dir.parents and (root / INDEX_NAME).is_file():
            try:
                _locked_write(root / INDEX_NAME, json.dumps(_entry(root, run_dir, record)) + "\n")
            except OSError as error:
                _cannot_write(root, error)
                with contextlib.suppress(OSError):  # this run is not in it: the next search rebuilds it
                    (root / SIZE_NAME).unlink(missing_ok=True)


def _newest(candidates: list[tuple[Path, dict]], variant: str, seed: int, exclude_under: Path | None):
    best = None
    excluded = Path(exclude_under).resolve() if exclude_under is not None else None
    for root, entry in candidates:
        if entry.get("variant") != variant or entry.get("seed") != seed or entry.get("mode") in NOT_PARENTS:
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
