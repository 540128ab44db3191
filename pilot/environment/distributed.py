"""4. Whether the configured distributed backend initialises: a 1-process group through a FileStore,
one all-reduce, torn down."""

from __future__ import annotations

import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from pilot.config.values import enum_value
from pilot.engine.distributed import resolve_backend
from pilot.errors import error_line

DIST_TIMEOUT = timedelta(seconds=30)  # a 1-process group that takes longer does not initialise


def distributed_facts(cfg: DictConfig, device: torch.device) -> dict[str, Any]:
    """Initialise the configured backend in a 1-process group (FileStore), all-reduce, tear down."""
    configured = str(enum_value(cfg.distributed.backend))
    backend = resolve_backend(configured, device)
    facts: dict[str, Any] = {
        "configured": configured,
        "backend": backend,
        "replicas": int(cfg.distributed.replicas),
        "initialises": False,
        "seconds": None,
    }
    if dist.is_initialized():  # torchrun or a SLURM task group: the group this run uses already exists
        facts.update(
            initialises=True, how=f"already initialised: {dist.get_backend()}, world size {dist.get_world_size()}"
        )
        return facts
    if backend == "nccl" and not (torch.cuda.is_available() and dist.is_nccl_available()):
        facts["error"] = (
            "no CUDA device is visible" if not torch.cuda.is_available() else "this torch is built without NCCL"
        )
        return facts
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pilot-env-") as scratch:
        try:
            store = dist.FileStore(str(Path(scratch) / "store"), 1)
            dist.init_process_group(backend, store=store, rank=0, world_size=1, timeout=DIST_TIMEOUT)
            try:
                value = torch.ones(1, device="cuda" if backend == "nccl" else "cpu")
                dist.all_reduce(value)
            finally:
                dist.destroy_process_group()
            facts.update(initialises=True, how="1-process group through a FileStore, one all-reduce, torn down")
        except Exception as error:  # RuntimeError, DistBackendError, ValueError: the backend's own words
            facts["error"] = error_line(error)
    facts["seconds"] = round(time.perf_counter() - started, 4)
    return facts
