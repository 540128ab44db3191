"""Training checkpoints and the exported artefact, in standard formats only.

A checkpoint holds everything a resumed run needs: model, optimizer, LR
scheduler, gradient scaler, every RNG state (Python, NumPy, torch CPU, CUDA),
the data position (epoch, position in the shuffled order), the update count,
examples and targets seen, and the config that defines the run (with its
hash). Every value is a tensor or a plain Python value, so
``torch.load(weights_only=True)`` reads it without unpickling arbitrary objects;
a file that needs more is refused.

Writing is atomic: a temporary name, flush, fsync, rename, fsync of the
directory. A process killed at any instant leaves the previous checkpoint or
the new one, never a half-written file under a checkpoint's name. Rotation
keeps the last ``keep_last`` and never deletes the newest valid one.
"""
from __future__ import annotations

import logging
import os
import pickle
import random
import re
import signal
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import save_file

from pilot.errors import UnsafeFileError
from pilot.run_record import NOT_DEFINING

log = logging.getLogger("pilot")
FORMAT = "pilot-checkpoint-v1"
NAME = re.compile(r"^ckpt-(\d{8})\.pt$")
TMP_MARK = ".tmp-"


class UnsafeCheckpointError(UnsafeFileError):
    """A file that would need arbitrary unpickling: refused, never executed."""


# --------------------------------------------------------------------------- fault hooks
def fault_point(point: str, update: Optional[int] = None) -> None:
    """Test hook: ``PILOT_FAULT=<point>[@<update>]`` kills this process with SIGKILL there.

    Points: ``update`` (after an update), ``before_write``, ``after_write``,
    ``before_rename`` (inside a checkpoint save). Unset in normal use.
    """
    spec = os.environ.get("PILOT_FAULT")
    if not spec:
        return
    name, _, at = spec.partition("@")
    if name == point and (not at or update is None or int(at) == update):
        os.kill(os.getpid(), signal.SIGKILL)


# --------------------------------------------------------------------------- defining config
def defining_config(cfg: DictConfig) -> Dict[str, Any]:
    """Flattened resolved config without the keys that do not define the run."""
    flat: Dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = node
    walk(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), "")
    return {k: v for k, v in flat.items()
            if not any(k == p.rstrip(".") or k.startswith(p) for p in NOT_DEFINING)}


def differing_keys(saved: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
    return [f"{k}: checkpoint {saved.get(k, '<absent>')!r} != now {current.get(k, '<absent>')!r}"
            for k in sorted(set(saved) | set(current)) if saved.get(k) != current.get(k)]


# --------------------------------------------------------------------------- RNG
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


def restore_rng_states(states: Dict[str, Any]) -> None:
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy = states["numpy"]
    np.random.set_state((numpy["kind"], numpy["keys"].numpy().astype(np.uint32), numpy["pos"],
                         numpy["has_gauss"], numpy["cached_gaussian"]))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


# --------------------------------------------------------------------------- save
def training_state(trainer, cfg: DictConfig) -> Dict[str, Any]:
    from pilot.run_record import config_hash

    return {
        "format": FORMAT,
        "model": trainer.raw_model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict(),
        "rng": rng_states(),
        "position": trainer.position(),
        "torch_threads": torch.get_num_threads(),  # another count changes float reduction order
        "config_hash": config_hash(cfg),
        "defining_config": defining_config(cfg),
    }


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_torch_save(obj: Any, path: Path, update: Optional[int] = None) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}")
    fault_point("before_write", update)
    with tmp.open("wb") as handle:
        torch.save(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())
    fault_point("after_write", update)
    fault_point("before_rename", update)
    os.replace(tmp, path)
    _fsync_directory(path.parent)


def checkpoint_path(directory: Path, update: int) -> Path:
    return Path(directory) / f"ckpt-{update:08d}.pt"


def list_checkpoints(directory: Path) -> List[Tuple[int, Path]]:
    """(update, path) of every file named like a checkpoint, newest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name))]
    return sorted(found, reverse=True)


def looks_complete(path: Path) -> bool:
    """Cheap structural check: the zip's central directory is readable and holds torch's records."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.endswith("data.pkl") for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def save_checkpoint(trainer, cfg: DictConfig, directory: Path, keep_last: int = 3) -> Path:
    """Write ckpt-<update>.pt atomically, then rotate (never the newest complete one)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(directory, trainer.updates_done)
    atomic_torch_save(training_state(trainer, cfg), path, trainer.updates_done)
    if looks_complete(path):
        for _, old in list_checkpoints(directory)[max(1, keep_last):]:
            old.unlink(missing_ok=True)
    else:  # never rotate away older checkpoints on the strength of a broken new one
        log.warning("checkpoint %s does not read back as complete; older checkpoints kept", path)
    return path


def clean_temporary_files(directory: Path) -> List[str]:
    """Remove leftovers of interrupted saves; return their names (for the log and run.json)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    leftovers = sorted(p for p in directory.iterdir() if TMP_MARK in p.name)
    for path in leftovers:
        path.unlink(missing_ok=True)
    return [p.name for p in leftovers]


# --------------------------------------------------------------------------- load
def safe_load(path: Path) -> Dict[str, Any]:
    """``torch.load(weights_only=True)``: tensors and plain values only, never code."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        with open(path, "rb") as handle:
            raw_pickle = handle.read(1) == b"\x80" and not zipfile.is_zipfile(path)
        if "global" not in str(error).lower() and not raw_pickle:
            # not a refusal of code: the bytes are just broken (truncated, overwritten)
            raise ValueError(f"{path} is corrupt: {str(error).splitlines()[0][:200]}") from error
        raise UnsafeCheckpointError(
            f"{path} needs arbitrary unpickling to load, which could run code; refused. "
            "Only checkpoints written by pilot (tensors and plain values) or safetensors files "
            f"are read. ({str(error).splitlines()[0][:200]})") from error


def load_checkpoint(path: Path) -> Dict[str, Any]:
    state = safe_load(path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint")
    return state


def latest_valid_checkpoint(directory: Path) -> Optional[Tuple[Path, Dict[str, Any]]]:
    """Newest checkpoint that loads; every newer broken one is reported and skipped."""
    for _, path in list_checkpoints(directory):
        try:
            return path, load_checkpoint(path)
        except UnsafeCheckpointError:
            raise
        except Exception as error:  # truncated, corrupt, foreign: fall back to an older one
            log.warning("checkpoint %s is unreadable (%s: %s); falling back to an older one",
                        path, type(error).__name__, str(error).splitlines()[0][:200])
    return None


def restore_training_state(trainer, state: Dict[str, Any]) -> None:
    trainer.raw_model.load_state_dict(state["model"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    trainer.scaler.load_state_dict(state["scaler"])
    position = state["position"]
    trainer.updates_done = int(position["updates_done"])
    trainer.examples_seen = int(position["examples_seen"])
    trainer.targets_seen = int(position["targets_seen"])
    restore_rng_states(state["rng"])


# --------------------------------------------------------------------------- export
def export_artefact(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> Path:
    """Weights (safetensors, contiguous CPU tensors) and the resolved config for evaluation."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    tmp = directory / f"model.safetensors{TMP_MARK}{os.getpid()}"
    save_file(weights, str(tmp), metadata={"format": "pilot-export-v1"})
    os.replace(tmp, directory / "model.safetensors")
    OmegaConf.save(cfg, directory / "config.yaml", resolve=True)
    return directory / "model.safetensors"
