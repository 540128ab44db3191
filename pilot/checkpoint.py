"""Training checkpoints and the exported artefact, in standard formats only.

A checkpoint holds everything a resumed run needs: model, optimizer, LR
scheduler, gradient scaler, RNG states and the data position. It is written
with ``torch.save`` to a temporary name, flushed, fsynced and renamed into
place, so a reader sees the old file or the new one, never half of one. Every
value is a tensor or a plain Python value, so ``torch.load(weights_only=True)``
reads it back without unpickling arbitrary objects. The export is the model's
weights in safetensors plus the resolved config.
"""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Dict

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import save_file


def rng_states() -> Dict[str, Any]:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    states: Dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def training_state(trainer, config_hash: str) -> Dict[str, Any]:
    return {
        "format": "pilot-checkpoint-v1",
        "model": trainer.raw_model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict(),
        "rng": rng_states(),
        "position": trainer.position(),
        "config_hash": config_hash,
    }


def atomic_torch_save(obj: Any, path: Path) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with tmp.open("wb") as handle:
        torch.save(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)


def save_checkpoint(trainer, path: Path, config_hash: str) -> Path:
    atomic_torch_save(training_state(trainer, config_hash), path)
    return Path(path)


def export_artefact(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> Path:
    """Weights (safetensors, contiguous CPU tensors) and the resolved config for evaluation."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    tmp = directory / "model.safetensors.tmp"
    save_file(weights, str(tmp), metadata={"format": "pilot-export-v1"})
    os.replace(tmp, directory / "model.safetensors")
    OmegaConf.save(cfg, directory / "config.yaml", resolve=True)
    return directory / "model.safetensors"
