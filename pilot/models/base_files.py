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
The checkpoint records it and a resume compares it (``pilot.resume_files.refuse_changed_base``); the
export's ``base.json`` keeps the full hash of the weights. A full fine-tune's checkpoint holds every
weight, but its model is built from ``model.path``'s config first: a folder saved over with another
architecture failed as a ``load_state_dict`` error, one with other settings (dropout, rope scaling) went
on under them without a word. It is fingerprinted and compared the same way.

Files no model load reads do not count (``is_model_file``: the tokenizer's, a README or a licence, pilot's
own ``reload_check.json`` rewritten beside an export used as a base, hidden files): a tokenizer saved into
the folder later is no other model, and a resume over it was refused as one. Every other file counts
(weights of any format, the code of a model its factory loads with ``trust_remote_code``). The files are
fingerprinted once, before the model is built (``pilot.engine.build``), and every checkpoint and run.json
keep that value: taken again at each save, a folder saved over during the run was recorded as the one the
run started from. Checkpoints written before (``ALL_FILES_KEY``) fingerprinted every file, and are compared
so.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.file_fingerprint import NOTHING, fingerprint, read_by_programs

MODEL_FILES_KEY = "model_files_fingerprint"  # a checkpoint's: the fingerprint of the model's own files
ALL_FILES_KEY = "base_files_fingerprint"  # an earlier checkpoint's: of every file in the folder
# files of a model folder that no model load reads: the tokenizer's (``data.tokenizer`` names them, and they
# are fingerprinted as data), documentation, pilot's own beside an export, a Trainer checkpoint's training state
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
             "vocab.txt", "merges.txt", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model",
             "chat_template.jinja", "chat_template.json", "preprocessor_config.json", "processor_config.json")  # fmt: skip
NOT_READ = (*TOKENIZER, "reload_check.json", "trainer_state.json", "training_args.bin", "optimizer.pt", "scheduler.pt")


def is_model_file(name: str) -> bool:
    """Whether a model load may read this file of its folder (``name`` below it): any file programs read
    (``read_by_programs``: not hidden, not documentation) but those ``NOT_READ`` — weights of any format,
    configs and the code of a model whose factory trusts remote code all count; unknown files count."""
    base = name.rsplit("/", 1)[-1]
    return read_by_programs(name) and base not in NOT_READ and not base.startswith("rng_state")


def base_files_fingerprint(cfg: DictConfig, every_file: bool = False) -> str | None:
    """The fingerprint of the files of the model read from ``model.path``: an adapter's base, or the model
    a full fine-tune starts from (None: no path, or nothing readable there); ``every_file``: as checkpoints
    before ``MODEL_FILES_KEY`` took it."""
    path = select(cfg, "model.path")
    if not path or not Path(path).is_dir():
        return None
    found = fingerprint(path, None if every_file else is_model_file)
    return None if found == NOTHING and not every_file else found  # no model file there: no model to name


def saved_and_now(cfg: DictConfig, saved: dict, now: str | None = None) -> tuple[str | None, str | None]:
    """The fingerprint ``saved`` holds (a checkpoint's state, run.json's ``model_path``) and the folder's
    now (``now``: its model files' taken already), taken the way it was (``ALL_FILES_KEY``: every file);
    (None, None) when it holds none."""
    if saved.get(MODEL_FILES_KEY):
        return saved[MODEL_FILES_KEY], now if now is not None else base_files_fingerprint(cfg)
    if saved.get(ALL_FILES_KEY):
        return saved[ALL_FILES_KEY], base_files_fingerprint(cfg, every_file=True)
    return None, None


FINGERPRINT_OF = "the folder's files but the tokenizer's, documentation and hidden ones"  # run.json model_path.of


def recorded(cfg: DictConfig, files_read: dict) -> dict | None:
    """run.json's ``model_path``: the folder and the fingerprint the run read it with (``files_read``)."""
    if not files_read.get(MODEL_FILES_KEY):
        return None
    return {
        "path": str(Path(cfg.model.path).resolve()),
        "fingerprint": files_read[MODEL_FILES_KEY],
        "of": FINGERPRINT_OF,
    }


def read_through(cfg: DictConfig, before: str | None) -> dict:
    """run.json's ``model_path`` for a pilot, whose steps each build the model again: the folder's fingerprint
    when the pilot began (``before``) while it still holds; a folder saved over during the pilot has none (which
    model each step read cannot be named) and says both fingerprints."""
    if not before:
        return {}
    entry = recorded(cfg, {MODEL_FILES_KEY: before}) or {}
    if (now := base_files_fingerprint(cfg)) != before:
        entry.update(fingerprint=None, changed_while_read=f"before {before[:12]}, after: {now_said(now)}")
    return {"model_path": entry}


def recorded_key(model_path: dict) -> str:
    """How run.json's ``model_path`` took its fingerprint: of the model's files, or (before ``of``) of every file."""
    return MODEL_FILES_KEY if model_path.get("of") == FINGERPRINT_OF else ALL_FILES_KEY


def now_said(now: str | None) -> str:
    """The folder's fingerprint now, as a refusal says it."""
    return f"now {now[:12]}" if now else "now none: the folder is gone or unreadable, or holds no model file"
