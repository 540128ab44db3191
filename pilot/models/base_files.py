"""The files of a local base model (``model.path``), fingerprinted for an adapter's checkpoints.

A checkpoint of an adapted model keeps the adapter alone; the base is rebuilt from the config on
resume. A base built from the config and seed is named by them (the defining config), but one read
from ``model.path`` is named only by its path: another ``save_pretrained`` copied over the same
directory would be read without a word, the adapter would go on training on another base, and the
export's ``base.json`` would name that base alone. ``base_files_fingerprint`` is the sha256 of
every file's name and size and of 64 blocks of 64 KiB spread evenly through it (the whole file up
to 4 MiB): another base (other weights change every block) gives another fingerprint, in
milliseconds for any size, where hashing every byte of a 70B base would take minutes per process.
A change of a few bytes between the blocks can go unseen; a difference it reports is always real.
The checkpoint records it and a resume compares it (``pilot.resume.refuse_changed_base``); the
export's ``base.json`` keeps the full hash of the weights.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.file_fingerprint import fingerprint
from pilot.models.adapter import wants_adapter


def base_files_fingerprint(cfg: DictConfig) -> str | None:
    """The fingerprint of the files of an adapter's base at ``model.path`` (None: no adapter, no path,
    or nothing readable there)."""
    path = select(cfg, "model.path")
    if not wants_adapter(cfg) or not path or not Path(path).is_dir():
        return None
    return fingerprint(path)
