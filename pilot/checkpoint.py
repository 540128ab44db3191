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

``Checkpointer`` owns a run's checkpoints: their directory, names, cadence and
rotation. Nothing else builds a checkpoint's file name.
"""

from __future__ import annotations

import logging
import os
import random
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pilot.engine.distributed import all_reduce_sum
from pilot.engine.sharding import is_sharded, load_whole_training_state, local_values, whole_training_state
from pilot.errors import UnsafeFileError, disk_full_guard, first_line
from pilot.faults import fault_point
from pilot.models.adapter import ADAPTER_FILES, export_adapter, is_adapted, load_trained_state, trained_state
from pilot.pickle_scan import code_in_file
from pilot.run_record import config_hash
from pilot.variant import is_defining
from pilot.weights_file import write_weights

log = logging.getLogger("pilot")
FORMAT = "pilot-checkpoint-v1"
NAME = re.compile(r"^ckpt-(\d{8})\.pt$")
TMP_MARK = ".tmp-"
WEIGHTS_FILE = "model.safetensors"  # a whole model's export; an adapted model's is the adapter alone


class UnsafeCheckpointError(UnsafeFileError):
    """A file that would need arbitrary unpickling: refused, never executed."""


# --------------------------------------------------------------------------- defining config
def defining_config(cfg: DictConfig) -> dict[str, Any]:
    """Flattened resolved config without the keys that do not define the run."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = node

    walk(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), "")
    return {k: v for k, v in flat.items() if is_defining(k)}


# --------------------------------------------------------------------------- RNG
def rng_states() -> dict[str, Any]:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    states: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: dict[str, Any]) -> None:
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy = states["numpy"]
    np.random.set_state(
        (
            numpy["kind"],
            numpy["keys"].numpy().astype(np.uint32),
            numpy["pos"],
            numpy["has_gauss"],
            numpy["cached_gaussian"],
        )
    )
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


# --------------------------------------------------------------------------- save
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


def training_state(trainer, cfg: DictConfig) -> dict[str, Any]:
    """Everything a resumed run needs. ``distributed.strategy=fsdp``: model and optimizer gathered whole
    onto rank 0, the optimizer's state keyed by parameter name, so any number of ranks resumes it (a
    collective: every rank calls it; only rank 0's state holds them)."""
    if is_sharded(cfg):
        model, optimizer = whole_training_state(trainer.raw_model, trainer.optimizer, is_adapted(trainer.raw_model))
    else:
        model, optimizer = trained_state(trainer.raw_model), trainer.optimizer.state_dict()
    return {
        "format": FORMAT,
        "model": model,  # an adapted model: the adapter alone
        "optimizer": optimizer,
        "optimizer_keys": "names" if is_sharded(cfg) else "indices",
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


def tensor_bytes(state: Any) -> int:
    """Bytes of the tensors in a nested state: about what its file needs on disk."""
    if torch.is_tensor(state):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(tensor_bytes(v) for v in state.values())
    if isinstance(state, (list, tuple)):
        return sum(tensor_bytes(v) for v in state)
    return 0


def atomic_torch_save(obj: Any, path: Path, update: int | None = None) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}")
    fault_point("before_write", update)
    with disk_full_guard(path, tmp, needed_bytes=tensor_bytes(obj) + 65536):
        fault_point("enospc", update)
        with tmp.open("wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
    fault_point("after_write", update)
    fault_point("before_rename", update)
    os.replace(tmp, path)
    _fsync_directory(path.parent)


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
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


def clean_temporary_files(directory: Path) -> list[str]:
    """Remove leftovers of interrupted saves; return their names (for the log and run.json).

    A leftover that cannot be removed (a read-only directory) is left where it is, with a
    warning: it never has a checkpoint's name, so it cannot be mistaken for one.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    removed = []
    for path in sorted(p for p in directory.iterdir() if TMP_MARK in p.name):
        try:
            path.unlink(missing_ok=True)
            removed.append(path.name)
        except OSError as error:
            log.warning(
                "could not remove the leftover temporary file %s (%s); left in place, "
                "the resume uses the newest valid checkpoint",
                path,
                first_line(error),
            )
    return removed


# --------------------------------------------------------------------------- load
def safe_load(path: Path) -> dict[str, Any]:
    """``torch.load(weights_only=True)``: tensors and plain values only, never code.

    When torch refuses the file, its pickles are disassembled (``pickle_scan``, nothing in them
    runs) to say why. A complete pickle that names code or builds objects of classes named in
    the file is *unsafe*: ``UnsafeCheckpointError``. Anything else that fails (truncated,
    overwritten, garbage, not a checkpoint) is *corrupt*: ``ValueError``.
    """
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, MemoryError):  # the file cannot be read at all: not a verdict on its bytes
        raise
    except Exception as error:  # broken bytes fail in many ways: UnpicklingError, EOFError, struct.error...
        failure = error
    found = code_in_file(path)
    if not found:
        raise ValueError(f"{path} is corrupt: {first_line(failure)}") from failure
    raise UnsafeCheckpointError(
        f"{path} is unsafe: loading it would run code or build objects named in the file "
        f"({', '.join(found[:6])}{', ...' if len(found) > 6 else ''}); refused, never executed. "
        "Only checkpoints written by pilot (tensors and plain values) or safetensors files are read."
    ) from failure


def load_checkpoint(path: Path) -> dict[str, Any]:
    state = safe_load(path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint")
    bad = non_finite_tensors(state.get("model", {}), "model.")
    if bad:  # written before pilot refused such saves: never resume from a diverged state
        raise ValueError(f"{path} holds non-finite values in {len(bad)} model tensor(s) ({', '.join(bad[:3])})")
    return state


def latest_valid_checkpoint(directory: Path) -> tuple[Path, dict[str, Any]] | None:
    """Newest checkpoint that loads; every newer broken one is reported and skipped."""
    for _, path in list_checkpoints(directory):
        try:
            return path, load_checkpoint(path)
        except UnsafeCheckpointError:
            raise
        except Exception as error:  # truncated, corrupt, foreign: fall back to an older one
            log.warning(
                "checkpoint %s is unreadable (%s: %s); falling back to an older one",
                path,
                type(error).__name__,
                first_line(error),
            )
    return None


def restore_training_state(trainer, state: dict[str, Any]) -> None:
    by_name = state.get("optimizer_keys") == "names"
    if by_name != is_sharded(trainer.cfg):
        saved, now = ("fsdp", "ddp") if by_name else ("ddp", "fsdp")
        raise ValueError(
            f"this checkpoint was written with distributed.strategy={saved} and this run uses {now}: its "
            f"optimizer state is keyed differently. Fix: resume with distributed.strategy={saved}, or start "
            "a new run directory."
        )
    if by_name:  # each rank takes its shard of the whole state, at any number of ranks
        load_whole_training_state(trainer.raw_model, trainer.optimizer, state["model"], state["optimizer"])
    else:
        load_trained_state(trainer.raw_model, state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    trainer.scaler.load_state_dict(state["scaler"])
    position = state["position"]
    trainer.updates_done = int(position["updates_done"])
    trainer.examples_seen = int(position["examples_seen"])
    trainer.targets_seen = int(position["targets_seen"])
    restore_rng_states(state["rng"])


# --------------------------------------------------------------------------- a run's checkpoints
class Checkpointer:
    """The checkpoints of one run (torchtitan's checkpointer): their directory, names
    (``ckpt-<update>.pt``), cadence and rotation, and the config each one records.

    ``latest_valid()`` once at the start, ``due(update)`` after every update, ``save(trainer)``.
    """

    def __init__(self, directory: Path, cfg: DictConfig, every: int = 0, keep_last: int = 3):
        self.directory = Path(directory)
        self.cfg = cfg  # recorded in each checkpoint: its hash and its defining keys
        self.every = every  # a checkpoint after every ``every`` updates (0: only when saved explicitly)
        self.keep_last = keep_last  # older ones are deleted, never the newest complete one

    @classmethod
    def for_run(cls, run_dir: Path, cfg: DictConfig) -> Checkpointer:
        """A training run's: ``<run_dir>/checkpoints``, ``checkpoint.every``, ``checkpoint.keep_last``."""
        return cls(Path(run_dir) / "checkpoints", cfg, int(cfg.checkpoint.every), int(cfg.checkpoint.keep_last))

    def path(self, update: int) -> Path:
        """The checkpoint file of the state after ``update`` updates."""
        return self.directory / f"ckpt-{update:08d}.pt"

    def has(self, update: int) -> bool:
        return self.path(update).exists()

    def due(self, update: int) -> bool:
        """Whether the cadence asks for a checkpoint after this update."""
        return bool(self.every) and update % self.every == 0

    def save(self, trainer, state: dict[str, Any] | None = None) -> Path:
        """Write ckpt-<update>.pt atomically, then rotate (never the newest complete one).

        A state holding NaN/inf is refused: a resumable checkpoint is always a finite one. ``state``:
        already gathered and checked on every rank (FSDP: ``gathered_state``), written as it is.
        """
        if state is None:
            bad = training_state_non_finite(trainer)
            if bad:
                raise ValueError(
                    f"refusing to save a checkpoint at update {trainer.updates_done}: non-finite values "
                    f"in {len(bad)} tensor(s) ({', '.join(bad[:3])})"
                )
            state = training_state(trainer, self.cfg)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(trainer.updates_done)
        atomic_torch_save(state, path, trainer.updates_done)
        if looks_complete(path):
            for _, old in list_checkpoints(self.directory)[max(1, self.keep_last) :]:
                old.unlink(missing_ok=True)
        else:  # never rotate away older checkpoints on the strength of a broken new one
            log.warning("checkpoint %s does not read back as complete; older checkpoints kept", path)
        return path

    def gathered_state(self, trainer) -> dict[str, Any] | None:
        """FSDP: the state to save, gathered from every rank (a collective: every rank calls it before
        rank 0 saves); None without FSDP, where rank 0 builds it alone in ``save``."""
        return training_state(trainer, self.cfg) if getattr(trainer, "sharded", False) else None

    def latest_valid(self) -> tuple[Path, dict[str, Any]] | None:
        return latest_valid_checkpoint(self.directory)

    def clean_temporary_files(self) -> list[str]:
        return clean_temporary_files(self.directory)


# --------------------------------------------------------------------------- export
def export_artefact(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> Path:
    """Weights (safetensors, contiguous CPU tensors, shared ones once) and the resolved config; for an
    adapted model the adapter alone (``models.adapter.export_adapter``). Returns the weights file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if is_adapted(model):  # the adapter alone, in peft's format, and the base's identity
        (directory / WEIGHTS_FILE).unlink(missing_ok=True)
        weights = export_adapter(model, cfg, directory)
    else:
        for name in ADAPTER_FILES:
            (directory / name).unlink(missing_ok=True)
        weights = directory / WEIGHTS_FILE
        tmp = directory / f"{WEIGHTS_FILE}{TMP_MARK}{os.getpid()}"
        write_weights(model.state_dict(), tmp, metadata={"format": "pilot-export-v1"})
        os.replace(tmp, weights)
    OmegaConf.save(cfg, directory / "config.yaml", resolve=True)
    return weights
