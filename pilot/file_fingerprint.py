"""A file's or a directory's fingerprint: the sha256 of every file's name and size and of 64 blocks of
64 KiB spread evenly through it (the whole file up to 4 MiB). Other content (other weights, other data)
changes many blocks and gives another fingerprint, in milliseconds for any size, where hashing every byte
of a large file would take minutes per process. A change of a few bytes between the blocks can go
unseen; a difference it reports is always real."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

BLOCK, BLOCKS = 1 << 16, 64
DOCUMENTATION = ("readme", "license", "licence", "notice", "use_policy")  # README.md, LICENSE, USE_POLICY.md


def read_by_programs(name: str) -> bool:
    """Whether a file of a directory (``name`` below it) is one a program may read: not hidden nor in a hidden
    folder (a download's ``.cache/``), not documentation (a README, a licence)."""
    parts = name.split("/")
    return not any(part.startswith(".") for part in parts) and not parts[-1].lower().startswith(DOCUMENTATION)


def _files(root: Path, keep: Callable[[str], bool] | None) -> list[Path]:
    if root.is_file():
        return [root]
    found = (p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    return sorted(p for p in found if keep is None or keep(p.relative_to(root).as_posix()))


def _sampled(path: Path, size: int, digest: Any) -> None:
    with open(path, "rb") as handle:
        if size <= BLOCK * BLOCKS:
            digest.update(handle.read())
            return
        for k in range(BLOCKS):
            handle.seek((size - BLOCK) * k // (BLOCKS - 1))
            digest.update(handle.read(BLOCK))


NOTHING = hashlib.sha256().hexdigest()  # the fingerprint of a directory with no file (or none kept)


def fingerprint(path: Path | str, keep: Callable[[str], bool] | None = None) -> str | None:
    """The fingerprint of the file or directory at ``path`` (``keep``: of a directory's files whose names
    below it it keeps, the others left out); None when nothing there can be read."""
    root = Path(path).resolve()
    if not root.exists():
        return None
    digest = hashlib.sha256()
    try:
        for file in _files(root, keep):
            size = file.stat().st_size
            name = file.name if root.is_file() else file.relative_to(root).as_posix()
            digest.update(f"{name}:{size}\n".encode())
            _sampled(file, size, digest)
    except OSError:
        return None
    return digest.hexdigest()
