"""What an earlier launch left in a sweep directory that a new launch into it replaces: its recap (kept as
recap-<time>.*) and its multirun.yaml (the sweep's definition, which Hydra rewrites at every launch: kept as
multirun-<the same time>.yaml, copied before Hydra rewrites it)."""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path

import pilot.recap as recap  # its RecapRefused through the package: loaded on first use

RECAP_FILES = ("recap.md", "recap.csv", "recap.png")


def earlier_stamp(sweep_dir: Path, otherwise: float | None = None) -> str | None:
    """The earlier recap's time (its newest file's), else ``otherwise`` (a time in seconds), as YYYYmmdd-HHMMSS."""
    earlier = [sweep_dir / name for name in RECAP_FILES if (sweep_dir / name).is_file()]
    when = max((p.stat().st_mtime for p in earlier), default=otherwise)
    return None if when is None else time.strftime("%Y%m%d-%H%M%S", time.localtime(when))


def keep_earlier_recap(sweep_dir: Path) -> str | None:
    """An earlier launch's recap in this sweep directory (a reused ``hydra.sweep.dir``) is kept under its
    time (recap-<YYYYmmdd-HHMMSS>.*) before this launch's is written: a relaunch replaced it, its runs gone
    from every table. Kept as a second name of the same file (a hard link: no space needed, a full disk
    included), so that it also stays under its own names until the new recap is whole and replaces them:
    a recap that cannot be finished leaves the earlier one where it was."""
    earlier = [sweep_dir / name for name in RECAP_FILES if (sweep_dir / name).is_file()]
    if not earlier:
        return None

    def kept(path: Path, stamp: str) -> Path:
        return path.with_name(f"recap-{stamp}{path.suffix}")

    stamp = earlier_stamp(sweep_dir)
    if all(kept(p, stamp).exists() and os.path.samefile(p, kept(p, stamp)) for p in earlier):
        return stamp  # kept by an earlier attempt that could not write its own recap
    while any(kept(p, stamp).exists() for p in earlier):  # two in one second
        stamp += "-1"
    try:
        for path in earlier:
            _second_name(path, kept(path, stamp))
    except OSError as error:
        for path in earlier:
            kept(path, stamp).unlink(missing_ok=True)
        raise recap.RecapRefused(
            f"cannot keep the earlier recap in {sweep_dir} under recap-{stamp}.*: {error.strerror or error}; "
            "it is left as it was and no new recap was written. Fix: free space there, or give another --out."
        ) from None
    print(f"recap: the earlier recap there is kept as {sweep_dir / f'recap-{stamp}.md'}")
    return stamp


def _second_name(path: Path, name: Path) -> None:
    """``name`` for the file at ``path`` too: a hard link, else (a file system without them) a copy."""
    try:
        os.link(path, name)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise
        shutil.copy2(path, name)


def times_of(path: Path) -> tuple[int, int] | None:
    """(access, modification) of ``path`` in ns, or None where it is not there."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_atime_ns, stat.st_mtime_ns


def copy_earlier_multirun_yaml(sweep_dir: Path, earlier: bytes | None, times: tuple[int, int] | None) -> Path | None:
    """The earlier launch's multirun.yaml copied to multirun-<its time>.yaml before Hydra rewrites it: a
    launch killed with -9 before its recap kept it in memory only, and the earlier sweep's definition was
    lost (an outside examination). None: nothing to copy, or the copy could not be made (said at the end)."""
    if earlier is None or times is None:
        return None
    stamp = earlier_stamp(sweep_dir, times[1] / 1e9)  # its recap's time, which its kept recap is named by
    kept = sweep_dir / f"multirun-{stamp}.yaml"
    while kept.exists() and kept.read_bytes() != earlier:  # another definition in the same second
        kept = kept.with_name(f"{kept.stem}-1.yaml")
    try:
        if kept.exists():
            return None  # kept by an earlier launch already: not this launch's to remove
        kept.write_bytes(earlier)
    except OSError:
        kept.unlink(missing_ok=True)
        return None
    return kept
