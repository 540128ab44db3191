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

Only the files a model is read from count (``is_model_file``: weights, config.json and its kin, a shard
index): a tokenizer saved into the folder later, a README, or pilot's own ``reload_check.json`` rewritten
beside an export used as a base is no other model, and a resume over it was refused as one. The files are
fingerprinted once, before the model is built (``pilot.engine.build``), and every checkpoint and run.json
keep that value: taken again at each save, a folder saved over during the run was recorded as the one the
run started from. Checkpoints written before (``ALL_FILES_KEY``) fingerprinted every file, and are compared
so.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.file_fingerprint import fingerprint

MODEL_FILES_KEY = "model_files_fingerprint"  # a checkpoint's: the fingerprint of the model's own files
ALL_FILES_KEY = "base_files_fingerprint"  # an earlier checkpoint's: of every file in the folder
WEIGHTS = (".safetensors", ".bin", ".pt", ".pth")  # what transformers and peft read weights from
CONFIGS = ("config.json", "generation_config.json", "adapter_config.json")  # what they read settings from


def is_model_file(name: str) -> bool:
    """A file a model is read from (``name`` below the folder): weights, their configs, a shard index."""
    base = name.rsplit("/", 1)[-1]
    return base.endswith(WEIGHTS) or base in CONFIGS or base.endswith(".index.json")


def base_files_fingerprint(cfg: DictConfig, every_file: bool = False) -> str | None:
    """The fingerprint of the files of the model read from ``model.path``: an adapter's base, or the model
    a full fine-tune starts from (None: no path, or nothing readable there); ``every_file``: as checkpoints
    before ``MODEL_FILES_KEY`` took it."""
    path = select(cfg, "model.path")
    if not path or not Path(path).is_dir():
        return None
    return fingerprint(path, None if every_file else is_model_file)


def saved_and_now(cfg: DictConfig, saved: dict) -> tuple[str | None, str | None]:
    """The fingerprint ``saved`` holds (a checkpoint's state, run.json's ``model_path``) and the folder's
    now, taken the way it was (``ALL_FILES_KEY``: every file); (None, None) when it holds none."""
    if saved.get(MODEL_FILES_KEY):
        return saved[MODEL_FILES_KEY], base_files_fingerprint(cfg)
    if saved.get(ALL_FILES_KEY):
        return saved[ALL_FILES_KEY], base_files_fingerprint(cfg, every_file=True)
    return None, None


FINGERPRINT_OF = "the model's files: weights, config.json and its kin, a shard index"  # run.json model_path.of


def recorded(cfg: DictConfig, files_read: dict) -> dict | None:
    """run.json's ``model_path``: the folder and the fingerprint the run read it with (``files_read``)."""
    if not files_read.get(MODEL_FILES_KEY):
        return None
    return {
        "path": str(Path(cfg.model.path).resolve()),
        "fingerprint": files_read[MODEL_FILES_KEY],
        "of": FINGERPRINT_OF,
    }


def recorded_key(model_path: dict) -> str:
    """How run.json's ``model_path`` took its fingerprint: of the model's files, or (before ``of``) of every file."""
    return MODEL_FILES_KEY if model_path.get("of") == FINGERPRINT_OF else ALL_FILES_KEY


def now_said(now: str | None) -> str:
    """The folder's fingerprint now, as a refusal says it."""
    return f"now {now[:12]}" if now else "now none: the folder is gone or unreadable, or holds no model file"
