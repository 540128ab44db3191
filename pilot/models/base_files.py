"""The files of a local base model (``model.path``) by content, for an adapter's checkpoints.

A checkpoint of an adapted model keeps the adapter alone; the base is rebuilt from the config on
resume. A base built from the config and seed is named by them (the defining config), but one read
from ``model.path`` is named only by its path: another ``save_pretrained`` copied over the same
directory would be read without a word, the adapter would go on training on another base, and the
export's ``base.json`` would name that base alone. ``base_files_sha256`` hashes every file under
the path (names and bytes); the checkpoint records it and a resume compares it
(``pilot.resume.refuse_changed_base``). Computed once per process for the same files (name, size and
modification time).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.models.adapter import wants_adapter

CHUNK = 1 << 20


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


@functools.lru_cache(maxsize=8)
def _digest(root: str, signature: tuple) -> str:
    digest = hashlib.sha256()
    for relative, _, _ in signature:
        digest.update(f"{relative}\n".encode())
        with open(os.path.join(root, relative), "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def base_files_sha256(cfg: DictConfig) -> str | None:
    """The sha256 of the files of an adapter's base at ``model.path`` (None: no adapter, no path, or
    nothing readable there)."""
    path = select(cfg, "model.path")
    if not wants_adapter(cfg) or not path or not Path(path).is_dir():
        return None
    root = Path(path).resolve()
    try:
        signature = tuple(
            (p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in _files(root)
        )
        return _digest(str(root), signature)
    except OSError:
        return None
