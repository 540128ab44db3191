"""What makes a checkpoint unfit to resume from, found before it is used: non-finite values in the
state about to be saved, bytes changed on disk after the save (the zip's CRC-32), shard files missing
or short (a sharded checkpoint's DCP metadata against the files)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import torch

from pilot.engine.distributed import all_reduce_sum
from pilot.engine.sharding import local_values
from pilot.models.adapter import trained_state
from pilot.sharded_checkpoint import read_metadata


def non_finite_tensors(state: Any, prefix: str = "") -> list[str]:
    """Names of the floating-point tensors in a (nested) state that hold NaN or inf."""
    if torch.is_tensor(state):
        bad = state.is_floating_point() and not bool(torch.isfinite(state).all())
        return [prefix or "tensor"] if bad else []
    if isinstance(state, dict):
        return [name for key, value in state.items() for name in non_finite_tensors(value, f"{prefix}{key}.")]
    if isinstance(state, (list, tuple)):
        return [name for i, value in enumerate(state) for name in non_finite_tensors(value, f"{prefix}{i}.")]
    return []


def training_state_non_finite(trainer) -> list[str]:
    """Model and optimizer tensors holding NaN/inf: such a state is never saved as resumable. Under
    FSDP each rank reads its shards and the ranks agree (a collective: every rank calls it)."""
    model, optimizer = trained_state(trainer.raw_model), trainer.optimizer.state_dict()["state"]
    bad = non_finite_tensors(local_values(model), "model.") + non_finite_tensors(local_values(optimizer), "optimizer.")
    if getattr(trainer, "sharded", False):
        elsewhere = float(all_reduce_sum(torch.tensor([float(len(bad))], device=trainer.device), trainer.ctx))
        return bad or (["a shard on another rank"] if elsewhere else [])
    return bad


def intact(path: Path) -> None:
    """Every record of the zip ``torch.save`` writes against the CRC-32 written with it (a whole read: 0.05 s
    for 256 MB here): bytes changed on disk after the save (a bit flip) are corrupt (``ValueError``), where
    they loaded and trained on. Not a zip: ``safe_load`` says what it is."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, EOFError):
        return
    if bad is not None:
        raise ValueError(f"{path} is corrupt: its record {bad} fails its CRC-32 (bytes changed after it was written)")


def check_shard_files(directory: Path) -> None:
    """Every file a sharded checkpoint's metadata names is there and holds the bytes it points to
    (``ValueError`` otherwise: a shard lost or cut short, so the resume falls back to an older one)."""
    needed: dict[str, int] = {}
    for info in read_metadata(directory).storage_data.values():
        needed[info.relative_path] = max(needed.get(info.relative_path, 0), info.offset + info.length)
    for name, size in sorted(needed.items()):
        have = (directory / name).stat().st_size if (directory / name).is_file() else None
        if have is None or have < size:
            raise ValueError(f"{directory.name}/{name} is {'missing' if have is None else 'cut short'}")
