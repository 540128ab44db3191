"""An index of the runs under one root (``campaign.run_root``, ``campaign.sweep_root``), so that
finding a relaunch's parent reads one file instead of every run.json of the campaign.

``<root>/.pilot_runs.jsonl`` holds one line per run (path relative to the root, run_id,
variant, seed, mode, started_at), appended by the run itself under an exclusive ``flock`` held until
its run.json is first written, so concurrent jobs never interleave lines; beside it,
``.pilot_runs.size`` holds the index's size in bytes as pilot last wrote it. It is never trusted
over the run directories: an index that is missing, unreadable, not the size pilot wrote (emptied,
cut short, cut in the middle of an append, edited) or not lines as pilot writes them (zeros a crash
left in place of its blocks) is rebuilt from them — scanned and written holding the index's lock, so
that a run appending its line meanwhile is not lost — and the run the index names as parent is checked
against its own run.json; when that disagrees (a run deleted or moved) the index is rebuilt and the
search made again. Every run it gives for the variant and seed sought is checked so (a time edited in
place must not reorder them), and a run appends its line, then writes its run.json, holding the index's lock (``adding``): a
kill between leaves a line its directory disproves, and no rebuild falls between them to drop the line. An
index that cannot be appended to (a directory in its place) loses its size file, so that a copy put back
later is rebuilt rather than trusted without the runs made meanwhile. An index that cannot be written (a directory in its place, a read-only root) is
left as it is: the run directories are read instead, and the run goes on. A run directory copied in
by hand is seen once the index is rebuilt (delete the file). A run is indexed under the roots it lives
under, and under any directory above it that holds an index (a run started from another working
directory with a ``hydra.run.dir`` inside this campaign's root); a forced resume that changes a run's
variant adds a line with the new one. "Newest" compares ``started_at`` as instants (their offsets
read), not as text.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
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


LOCK_WAIT_S = 60.0  # another process holding the index longer than this (hung, stopped): read around it
LOCK_SAID_S = 2.0  # said once a wait is this long (a rebuild of 10,000 runs holds it about 0.5 s)


def _lock(handle: Any, kind: int) -> None:
    """``flock`` the index: waits while another process holds it (a rebuild), saying so after
    ``LOCK_SAID_S``; past ``LOCK_WAIT_S`` an OSError, and the caller reads the directories instead."""
    started, said = time.monotonic(), False
    while True:
        try:
            fcntl.flock(handle, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - started
        if waited > LOCK_WAIT_S:
            raise OSError(
                errno.EWOULDBLOCK, f"another process has held its lock for over {LOCK_WAIT_S:.0f} s", handle.name
            )
        if waited > LOCK_SAID_S and not said:
            said = True
            log.warning("waiting for the run index %s: another process holds its lock (rebuilding it?)", handle.name)
        time.sleep(0.05)


def _append(root: Path, handle: Any, text: str) -> None:
    """Append ``text`` to the index open in ``handle``, its exclusive lock held; the size file follows,
    unless the index was already not as pilot wrote it (then the next search rebuilds it)."""
    as_written = _recorded_size(root) == os.fstat(handle.fileno()).st_size
    handle.write(text.encode())
    handle.flush()
    if as_written:
        _record_size(root, os.fstat(handle.fileno()).st_size)


def _scanned(root: Path) -> list[dict[str, Any]]:
    entries = []
    for path in sorted(root.glob("**/run.json")):
        record = _read_json(path)
        if record is not None:
            entries.append(_entry(root, path.parent, record))
    return entries


def rebuild(root: Path, containing: str | None = None) -> list[dict[str, Any]]:
    """Scan the run directories under ``root`` and write the index anew, both holding its lock (a run
    appending meanwhile waits, and is then in the new index); its entries. ``containing`` (a search
    that found the index not as pilot wrote it): another process may have rebuilt it while this one
    waited for the lock; then that index is read (``_parsed``) instead of scanning again. An index that
    cannot be written is said once and left as it is: the directories are read."""
    try:
        with (root / INDEX_NAME).open("a+b") as handle:
            _lock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                if (
                    containing is not None
                    and (found := _parsed(_as_written(root, handle.read()), containing)) is not None
                ):
                    return found
                entries = _scanned(root)
                handle.truncate(0)
                handle.write("".join(json.dumps(entry) + "\n" for entry in entries).encode())
                handle.flush()
                _record_size(root, os.fstat(handle.fileno()).st_size)
                return entries
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError as error:
        _cannot_write(root, error)
        return _scanned(root)


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


def _as_written(root: Path, data: bytes) -> str | None:
    """The index's text when it is as pilot wrote it: the size recorded beside it, and JSON object lines
    (no zeros where a crash left unwritten blocks, no line cut or joined); else None."""
    if _recorded_size(root) != len(data) or b"\0" in data or (data and not data.endswith(b"\n")):
        return None
    if data and not all(line.startswith(b"{") and line.endswith(b"}") for line in data[:-1].split(b"\n")):
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def _index_text(root: Path) -> str | None:
    """The index's text when it is as pilot wrote it (read holding its lock); else None."""
    with contextlib.suppress(OSError), (root / INDEX_NAME).open("rb") as handle:
        _lock(handle, fcntl.LOCK_SH)
        try:
            return _as_written(root, handle.read())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _parsed(text: str | None, containing: str) -> list[dict[str, Any]] | None:
    """The entries of the lines holding ``containing``; None when there is no text or a line is not JSON."""
    if text is None:
        return None
    found = []
    for line in text.splitlines():
        if containing not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            return None  # not as pilot writes its lines
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            found.append(entry)
    return found


def entries(root: Path, containing: str = "") -> list[dict[str, Any]]:
    """The index's entries (rebuilt from the run directories when the file is missing, unreadable or
    not as pilot wrote it); with ``containing``, only lines holding that text are parsed (pilot writes the
    lines, so a variant appears in its line exactly as ``json.dumps`` writes it)."""
    found = _parsed(_index_text(root), containing)
    return found if found is not None else rebuild(root, containing)


def roots_of(roots: Iterable[Path | str], run_dir: Path) -> list[Path]:
    """Where a relaunch started in ``run_dir`` looks for its parent: the configured roots, and any
    directory above it that holds an index (a run started from another working directory with a
    ``hydra.run.dir`` inside a campaign's ``outputs/``: that campaign's runs)."""
    found = {Path(root).resolve(): Path(root) for root in roots}
    for parent in Path(run_dir).resolve().parents:
        if (parent / INDEX_NAME).is_file():
            found.setdefault(parent, parent)
    return list(found.values())


def within_roots(roots: Iterable[Path | str], run_dir: Path) -> bool:
    """``run_dir`` lies under one of ``roots`` (resolved against the working directory)."""
    run_dir = Path(run_dir).resolve()
    return any(Path(root).resolve() in run_dir.parents for root in roots)


def add(roots: Iterable[Path], run_dir: Path, record: dict[str, Any]) -> None:
    """Append the run's line to its indexes (``adding``), its run.json already as ``record`` says."""
    with adding(roots, run_dir, record):
        pass


@contextlib.contextmanager
def adding(roots: Iterable[Path], run_dir: Path, record: dict[str, Any]) -> Iterator[None]:
    """Append the run's line to the index of each root it lives under (if indexed) and of any directory
    above it that holds an index (a run started from another working directory into this campaign's
    root), holding each index's lock until the block ends: the caller writes the run.json the line
    stands for inside it, so a rebuild (which scans run.json files under the same lock) never falls
    between the two and loses the line. An index that cannot be appended to is said, and its size file
    removed so that the next search rebuilds it: the run goes on."""
    run_dir = Path(run_dir).resolve()
    indexed = {Path(root).resolve() for root in roots} | {parent for parent in run_dir.parents}
    with contextlib.ExitStack() as held:
        for root in sorted(root for root in indexed if root in run_dir.parents and (root / INDEX_NAME).exists()):
            try:
                if not (root / INDEX_NAME).is_file():  # a directory in its place: a copy put back later lacks this run
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(root / INDEX_NAME))
                handle = held.enter_context((root / INDEX_NAME).open("ab"))
                _lock(handle, fcntl.LOCK_EX)  # roots in sorted order: two runs never wait on each other
                held.callback(fcntl.flock, handle, fcntl.LOCK_UN)
                _append(root, handle, json.dumps(_entry(root, run_dir, record)) + "\n")
            except OSError as error:
                _cannot_write(root, error)
                with contextlib.suppress(OSError):  # this run is not in it: the next search rebuilds it
                    (root / SIZE_NAME).unlink(missing_ok=True)
        yield


def started_instant(started_at: Any) -> float:
    """``started_at`` as seconds since the epoch (its offset read: 02:30+0200 is before 02:10+0100), for
    ordering runs recorded under other time zones or across a daylight-saving change; -inf when absent or
    not a time (ordered first)."""
    try:
        return datetime.fromisoformat(str(started_at)).timestamp()
    except (TypeError, ValueError, OverflowError, OSError):
        return float("-inf")


def _same_variant(candidates: list[tuple[Path, dict]], variant: str, seed: int, exclude_under: Path | None):
    """(started_at as an instant then run_id, run directory, entry) of every entry of ``variant`` and ``seed``
    that can be a parent: not a pilot or an estimate, not a job of the sweep ``exclude_under``."""
    found = []
    excluded = Path(exclude_under).resolve() if exclude_under is not None else None
    for root, entry in candidates:
        if entry.get("variant") != variant or entry.get("seed") != seed or entry.get("mode") in NOT_PARENTS:
            continue
        run_dir = (root / entry["path"]).resolve()  # only for this variant and seed: a few paths
        if excluded is not None and excluded in run_dir.parents:
            continue  # jobs of the same sweep are siblings, not relaunches
        found.append(((started_instant(entry.get("started_at")), str(entry.get("run_id") or "")), run_dir, entry))
    return found


def _as_recorded(run_dir: Path, entry: dict[str, Any]) -> bool:
    """The run's own run.json says what its index line says (a run deleted or moved, a line edited: not)."""
    record = _read_json(run_dir / "run.json") or {}
    return all(record.get(key) == entry.get(key) for key in ENTRY_KEYS)


def find_parent(roots: Iterable[Path], variant: str, seed: int, exclude_under: Path | None) -> str | None:
    """The newest earlier run of the same variant and seed (by started_at as an instant, then run_id): the run
    a relaunch relaunches. Read from the roots' indexes; every run they give for this variant and seed is
    checked against its own run.json (an edited time would otherwise reorder them), and a disagreement
    rebuilds the index from the run directories."""
    roots = [Path(root) for root in roots if Path(root).is_dir()]
    for attempt in range(2):
        needle = f'"variant": {json.dumps(variant)}'
        candidates = [
            (root, entry) for root in roots for entry in (entries(root, needle) if attempt == 0 else rebuild(root))
        ]
        found = _same_variant(candidates, variant, seed, exclude_under)
        if not found:
            return None
        if all(_as_recorded(run_dir, entry) for _, run_dir, entry in found):
            return max(found, key=lambda item: item[0])[2].get("run_id")
    return None  # the index disagreed with the run directories even after a rebuild: no parent claimed
