"""What a resume compares of the files its run reads (``find_resume_state``): the model folder at
``model.path``, the data settings' files and your code the config's ``_target_``s name must be those the
checkpoint's updates were trained with (fingerprints taken by ``engine.build.read_fingerprints``)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.data.data_files import data_files_fingerprint
from pilot.engine.build import USER_CODE_KEY
from pilot.errors import ResumeRefused
from pilot.models.adapter import wants_adapter
from pilot.models.base_files import MODEL_FILES_KEY, now_said, saved_and_now


def refuse_changed_base(cfg: DictConfig, path: Path, state: dict, read: dict) -> None:
    """The model read from ``model.path`` (an adapter's base, or where a full fine-tune started): the files
    there (``read``: ``read_fingerprints`` taken now) must be those the checkpoint's run was built from
    (``pilot.models.base_files``)."""
    saved, now = saved_and_now(cfg, state, read.get(MODEL_FILES_KEY))
    if saved and now != saved:
        what = (
            "another base than the one the adapter in {path} was trained on",
            "the adapter would go on training on another base, and the export's base.json would name that base alone",
        ) if wants_adapter(cfg) else (
            "another model than the one the run in {path} started from",
            "the model would be built from another config (another architecture fails to load the checkpoint's "
            "weights; other settings would go on without a word)",
        )  # fmt: skip
        raise ResumeRefused(
            f"model.path={cfg.model.path} holds {what[0].format(path=path)} (fingerprint of its files: checkpoint "
            f"{saved[:12]}, {now_said(now)}): {what[1]}. Fix: put back the model folder the run started from, "
            "or start a new run directory (leave out hydra.run.dir)."
        )


def refuse_changed_data(cfg: DictConfig, path: Path, state: dict, read: dict) -> None:
    """The files the data settings name must be those the checkpoint's updates trained on
    (``pilot.data.data_files``): a data file replaced or edited in place was trained on without a word."""
    saved = state.get("data_files")
    if not saved:
        return
    now = read["data_files"]
    changed = sorted(key for key, digest in saved.items() if now.get(key) != digest)
    if changed:  # a checkpoint of an earlier pilot fingerprinted every file of a directory
        every = data_files_fingerprint(cfg, every_file=True)
        changed = [key for key in changed if every.get(key) != saved[key]]
    if changed:
        named = ", ".join(f"{key}={select(cfg, key)}" for key in changed)
        raise ResumeRefused(
            f"{named}: the file's content differs from what the updates in {path} trained on (its fingerprint "
            "changed): the run would go on with another data set while its record names one. Fix: put back the "
            "file the run started with, or start a new run directory (leave out hydra.run.dir)."
        )


def changed_code(cfg: DictConfig, path: Path, state: dict, read: dict) -> list[dict[str, str | None]]:
    """Your modules the config's ``_target_``s name must be the code the checkpoint's updates ran
    (``user_code.code_fingerprint``): an edited task or model continued the run under other code while its
    REPRODUCE.md named the new code alone. Refused, unless ``checkpoint.force_resume`` (then the changes are
    the resume's record). A checkpoint of an earlier pilot holds no fingerprint of your code: nothing compared."""
    saved, now = state.get(USER_CODE_KEY) or {}, read.get(USER_CODE_KEY) or {}
    changed = [  # the same content under another path (the project moved) is the same code
        {"file": file, "sha256_before": digest, "sha256_now": now.get(file)}
        for file, digest in sorted(saved.items())
        if now.get(file) != digest and digest not in now.values()
    ]
    if changed and not cfg.checkpoint.force_resume:
        files = ", ".join(
            f"{Path(c['file']).name} ({c['file']})"
            + ("" if c["sha256_now"] else ": not found now (moved or edited, or not on the import path: PYTHONPATH?)")
            for c in changed
        )
        raise ResumeRefused(
            f"your code changed since the updates in {path} ran it: {files}: the run would go on under other code "
            "while its record and REPRODUCE.md name one. Fix: put back the code the run started with, start a new run "
            "directory (leave out hydra.run.dir), or checkpoint.force_resume=true to continue under the new code "
            "(recorded in run.json and REPRODUCE.md)."
        )
    return changed
