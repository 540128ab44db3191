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

Under FSDP (``distributed.strategy=fsdp``) a checkpoint is a directory
``ckpt-<update>.dcp``: every rank writes its own shards of the model and
optimizer into a temporary directory (``pilot.sharded_checkpoint``, PyTorch's
``torch.distributed.checkpoint``), rank 0 adds ``state.pt`` (the rest, as
above) and renames the directory: the same atomic publish. Nothing is gathered
onto one rank, and any number of ranks resumes it.

``Checkpointer`` owns a run's checkpoints: their directory, names, cadence and
rotation. Nothing else builds a checkpoint's file name.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
import zipfile
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pilot.checkpoint_checks import check_shard_files, intact, non_finite_tensors, training_state_non_finite
from pilot.engine.build import read_fingerprints
from pilot.engine.distributed import barrier, every_rank
from pilot.engine.optim import lr_from_this_schedule
from pilot.engine.rng_state import restore_rng_states, rng_states
from pilot.engine.sharding import is_sharded, load_whole_training_state
from pilot.errors import UnsafeFileError, disk_full_guard, first_line
from pilot.faults import fault_point
from pilot.models.adapter import is_adapted, load_trained_state, trained_state
from pilot.pickle_scan import code_in_file
from pilot.run_record import config_hash
from pilot.sharded_checkpoint import METADATA_FILE, read_shards, write_shards
from pilot.startup_signals import interrupt_behind
from pilot.variant import defining_config

log = logging.getLogger("pilot")
FORMAT = "pilot-checkpoint-v1"
NAME = re.compile(r"^ckpt-(\d{8})\.(pt|dcp)$")  # a file, or (FSDP) a directory of shards
STATE_FILE = "state.pt"  # a sharded checkpoint's everything but the model and optimizer
TMP_MARK = ".tmp-"
WEIGHTS_FILE = "model.safetensors"  # a whole model's export; an adapted model's is the adapter alone


class UnsafeCheckpointError(UnsafeFileError):
    """A file that would need arbitrary unpickling: refused, never executed."""


# --------------------------------------------------------------------------- save
def training_state(trainer, cfg: DictConfig, rng_by_rank: list | None = None) -> dict[str, Any]:
    """Everything a resumed run needs. ``distributed.strategy=fsdp``: everything but the model and the
    optimizer, which every rank writes as shards beside it (``Checkpointer.save``). ``rng_by_rank``:
    every rank's random state (each draws its own dropout masks), when there are several."""
    tensors = {} if is_sharded(cfg) else {"model": trained_state(trainer.raw_model)}  # an adapter: alone
    tensors.update({} if is_sharded(cfg) else {"optimizer": trainer.optimizer.state_dict()})
    return {
        "format": FORMAT,
        **tensors,
        "optimizer_keys": "names" if is_sharded(cfg) else "indices",
        "scheduler": trainer.scheduler.state_dict(),
        "scaler": trainer.scaler.state_dict(),
        "rng": rng_states(),
        **({"rng_by_rank": rng_by_rank} if rng_by_rank else {}),
        "position": trainer.position(),
        "torch_threads": torch.get_num_threads(),  # another count changes float reduction order
        "config_hash": config_hash(cfg),
        "defining_config": defining_config(cfg),
        **(getattr(trainer, "files_read", None) or read_fingerprints(cfg)),  # a resume compares them
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


def _synced_torch_save(obj: Any, path: Path) -> None:
    try:
        with Path(path).open("wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
    except Exception as error:  # a signal's stop inside torch.save surfaces as its writer's error: the stop
        if (stop := interrupt_behind(error)) is not None:
            raise stop from None
        raise


def atomic_torch_save(obj: Any, path: Path, update: int | None = None) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}")
    fault_point("before_write", update)
    with disk_full_guard(path, tmp, needed_bytes=tensor_bytes(obj) + 65536):
        fault_point("enospc", update)
        fault_point("eperm", update, tmp)
        _synced_torch_save(obj, tmp)
    fault_point("after_write", update)
    fault_point("before_rename", update)
    os.replace(tmp, path)
    _fsync_directory(path.parent)


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """(update, path) of every file (or sharded directory) named like a checkpoint, newest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name))]
    return sorted(found, reverse=True)


def looks_complete(path: Path) -> bool:
    """Cheap structural check: the zip's central directory is readable and holds torch's records; a
    sharded checkpoint: its state file and DCP's metadata (written last) are there."""
    if Path(path).is_dir():
        return (Path(path) / STATE_FILE).is_file() and (Path(path) / METADATA_FILE).is_file()
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
            remove_checkpoint(path)
            removed.append(path.name)
        except OSError as error:
            log.warning(
                "could not remove the leftover temporary file %s (%s); left in place, "
                "the resume uses the newest valid checkpoint",
                path,
                first_line(error),
            )
    return removed


def remove_checkpoint(path: Path) -> None:
    """A checkpoint file, a sharded checkpoint's directory or a leftover of either."""
    if Path(path).is_dir():
        shutil.rmtree(path)
    else:
        Path(path).unlink(missing_ok=True)


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
    """A checkpoint's state. A sharded one (a directory): its state file, its DCP metadata read safely,
    every shard file it names present and long enough; ``state["shards_at"]`` is the directory the
    model and optimizer are read from by ``restore_training_state`` (each rank its own shards)."""
    path = Path(path)
    sharded = path.is_dir()
    intact(path / STATE_FILE if sharded else path)
    state = safe_load(path / STATE_FILE if sharded else path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint")
    if sharded:
        check_shard_files(path)
        state["shards_at"] = path
    bad = non_finite_tensors(state.get("model", {}), "model.")
    if bad:  # written before pilot refused such saves: never resume from a diverged state
        raise ValueError(f"{path} holds non-finite values in {len(bad)} model tensor(s) ({', '.join(bad[:3])})")
    return state


def latest_valid_checkpoint(directory: Path, skipped: list[str] | None = None) -> tuple[Path, dict[str, Any]] | None:
    """Newest checkpoint that loads; every newer broken one is reported and skipped (and, given
    ``skipped``, named there with why, for the run's record)."""
    for _, path in list_checkpoints(directory):
        try:
            return path, load_checkpoint(path)
        except UnsafeFileError:
            raise
        except Exception as error:  # truncated, corrupt, foreign: fall back to an older one
            log.warning(
                "checkpoint %s is unreadable (%s: %s); falling back to an older one",
                path,
                type(error).__name__,
                first_line(error),
            )
            if skipped is not None:
                skipped.append(f"{path.name}: {type(error).__name__}: {first_line(error)}")
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
    if "shards_at" in state:  # each rank reads its shards, at any number of ranks
        read_shards(trainer.raw_model, trainer.optimizer, is_adapted(trainer.raw_model), state["shards_at"])
    elif by_name:  # gathered whole onto rank 0 (written before checkpoints were sharded)
        load_whole_training_state(trainer.raw_model, trainer.optimizer, state["model"], state["optimizer"])
    else:
        load_trained_state(trainer.raw_model, state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    lr_from_this_schedule(trainer.scheduler)
    trainer.scaler.load_state_dict(state["scaler"])
    position = state["position"]
    trainer.updates_done = int(position["updates_done"])
    trainer.examples_seen = int(position["examples_seen"])
    trainer.targets_seen = int(position["targets_seen"])
    by_rank, ctx = state.get("rng_by_rank"), trainer.ctx
    # every rank its own; at another number of ranks rank 0's (that resume is recorded as not bit-identical)
    restore_rng_states(by_rank[ctx.rank] if by_rank and len(by_rank) == ctx.world_size else state["rng"])


# --------------------------------------------------------------------------- a run's checkpoints
class Checkpointer:
    """The checkpoints of one run (torchtitan's checkpointer): their directory, names
    (``ckpt-<update>.pt``; FSDP: ``ckpt-<update>.dcp``), cadence and rotation, and the config each records.

    ``latest_valid()`` once at the start, ``due(update)`` after every update, ``save(trainer)``.
    """

    def __init__(self, directory: Path, cfg: DictConfig, every: int = 0, keep_last: int = 3):
        self.directory = Path(directory)
        self.cfg = cfg  # recorded in each checkpoint: its hash and its defining keys
        self.every = every  # a checkpoint after every ``every`` updates (0: only when saved explicitly)
        self.keep_last = keep_last  # older ones are deleted, never the newest complete one
        self.seconds: dict[int, float] = {}  # each save this process made: its update -> its wall time

    @classmethod
    def for_run(cls, run_dir: Path, cfg: DictConfig) -> Checkpointer:
        """A training run's: ``<run_dir>/checkpoints``, ``checkpoint.every``, ``checkpoint.keep_last``."""
        return cls(Path(run_dir) / "checkpoints", cfg, int(cfg.checkpoint.every), int(cfg.checkpoint.keep_last))

    def path(self, update: int) -> Path:
        """The checkpoint of the state after ``update`` updates: a file, or (FSDP) a directory of shards."""
        return self.directory / f"ckpt-{update:08d}.{'dcp' if is_sharded(self.cfg) else 'pt'}"

    def has(self, update: int) -> bool:
        return self.path(update).exists()

    def due(self, update: int) -> bool:
        """Whether the cadence asks for a checkpoint after this update."""
        return bool(self.every) and update % self.every == 0

    def save(self, trainer, writes: bool = True, checked: bool = False) -> Path:
        """Every rank calls it; ``writes``: this is rank 0. Without FSDP rank 0 writes ckpt-<update>.pt
        atomically; under FSDP every rank writes its shards and rank 0 publishes ckpt-<update>.dcp.
        Then rank 0 rotates (never the newest complete one).

        A state holding NaN/inf is refused: a resumable checkpoint is always a finite one
        (``checked``: the caller has just checked it, on every rank).
        """
        bad = [] if checked else training_state_non_finite(trainer)
        if bad:
            raise ValueError(
                f"refusing to save a checkpoint at update {trainer.updates_done}: non-finite values "
                f"in {len(bad)} tensor(s) ({', '.join(bad[:3])})"
            )
        path, started = self.path(trainer.updates_done), time.perf_counter()
        rng_by_rank = every_rank(rng_states(), trainer.ctx)  # a collective: before only rank 0 writes
        if writes:
            self.directory.mkdir(parents=True, exist_ok=True)
        if is_sharded(self.cfg):
            self._save_shards(trainer, path, writes, rng_by_rank)
        elif writes:
            atomic_torch_save(training_state(trainer, self.cfg, rng_by_rank), path, trainer.updates_done)
        if writes and looks_complete(path):
            for _, old in list_checkpoints(self.directory)[max(1, self.keep_last) :]:
                remove_checkpoint(old)
        elif writes:  # never rotate away older checkpoints on the strength of a broken new one
            log.warning("checkpoint %s does not read back as complete; older checkpoints kept", path)
        self.seconds[trainer.updates_done] = time.perf_counter() - started
        return path

    def _save_shards(self, trainer, path: Path, writes: bool, rng_by_rank: list | None) -> None:
        """Every rank writes its shards into one temporary directory; rank 0 adds the state file and
        renames the directory (atomic: a kill leaves the previous checkpoint the newest complete one)."""
        update, ctx = trainer.updates_done, trainer.ctx
        tmp = path.with_name(f"{path.name}{TMP_MARK}save")
        if writes and tmp.exists():  # a save killed earlier: start empty
            remove_checkpoint(tmp)
        barrier(ctx)
        fault_point("before_write", update)
        with disk_full_guard(path, tmp):
            fault_point("enospc", update)
            write_shards(trainer.raw_model, trainer.optimizer, is_adapted(trainer.raw_model), tmp)
            if writes:
                _synced_torch_save(training_state(trainer, self.cfg, rng_by_rank), tmp / STATE_FILE)
        fault_point("after_write", update)
        if writes:
            fault_point("before_rename", update)
            if looks_complete(path):  # this update is already saved (a preemption just after a save)
                remove_checkpoint(tmp)
            else:
                if path.exists():
                    remove_checkpoint(path)
                os.replace(tmp, path)
                _fsync_directory(self.directory)
        barrier(ctx)

    def latest_valid(self, skipped: list[str] | None = None) -> tuple[Path, dict[str, Any]] | None:
        return latest_valid_checkpoint(self.directory, skipped)

    def clean_temporary_files(self) -> list[str]:
        return clean_temporary_files(self.directory)


def checkpoint_bytes(path: Path) -> int:
    """A checkpoint's size on disk: its file, or every file of a sharded checkpoint."""
    path = Path(path)
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size
