"""The files of a model read from ``model.path``, fingerprinted for the checkpoints of its runs.

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
export's ``base.json`` keeps the full hash of the weights. A full fine-tune's checkpoint holds every
weight, but its model is built from ``model.path``'s config first: a folder saved over with another
architecture failed as a ``load_state_dict`` error, one with other settings (dropout, rope scaling) went
on under them without a word. It is fingerprinted and compared the same way.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.file_fingerprint import fingerprint


def base_files_fingerprint(cfg: DictConfig) -> str | None:
    """The fingerprint of the files of the model read from ``model.path``: an adapter's base, or the model
    a full fine-tune starts from (None: no path, or nothing readable there)."""
    path = select(cfg, "model.path")
    if not path or not Path(path).is_dir():
        return None
    return fingerprint(path)
