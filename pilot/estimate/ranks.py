"""The ranks a sharded (FSDP) estimate runs on: a fake process group of any size, or the real one.

A fake estimate of N ranks runs rank 0 alone on PyTorch's fake process group
(``torch.testing._internal.distributed.fake_pg``): every collective returns at once without
moving data, but FSDP allocates its buffers (the gathered parameters, the reduce-scatter input)
exactly as on N real ranks, so the tracker sees rank 0's memory. The device mesh is built
before the fake mode is entered (a mesh made of fake tensors cannot be built). A measured run
(``fake=False``) joins the process group its launcher made: real gloo ranks on the CPU, in
the tests and ``bench/fsdp_estimate.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from pilot.engine.distributed import DistContext
from pilot.engine.sharding import device_mesh, is_sharded
from pilot.estimate.refusal import EstimateRefused


@dataclass(frozen=True)
class Ranks:
    ctx: DistContext  # the rank whose memory is estimated (0) and the world size
    mesh: Any  # None: not sharded


@contextmanager
def estimate_ranks(cfg: DictConfig, fake: bool) -> Iterator[Ranks]:
    """The rank an estimate runs as; a fake process group for the duration when sharded and fake.
    FSDP over one rank is estimated unsharded: the engine trains one rank without a process group."""
    if not is_sharded(cfg) or int(cfg.distributed.replicas) == 1:
        yield Ranks(DistContext(), None)
        return
    world = int(cfg.distributed.replicas)
    if not fake:
        if not dist.is_initialized():
            raise EstimateRefused(
                "a measured FSDP run needs its ranks: start them with torchrun (or pilot.engine.distributed.spawn) "
                "so that torch.distributed is initialized."
            )
        ctx = DistContext(dist.get_rank(), dist.get_world_size(), dist.get_rank())
        yield Ranks(ctx, device_mesh(torch.device("cpu"), ctx.world_size))
        return
    if dist.is_initialized():
        raise EstimateRefused(
            "a fake FSDP estimate makes its own (fake) process group, but this process already belongs to one. "
            "Fix: run mode=estimate in a process of its own (python -m pilot mode=estimate ...)."
        )
    try:
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError as error:  # a private module: another PyTorch may move it
        raise EstimateRefused(
            f"this PyTorch ({torch.__version__}) has no fake process group ({error}), so N ranks cannot be "
            "estimated in one process. Fix: install the pinned torch (README), or measure on real ranks."
        ) from error
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        yield Ranks(DistContext(0, world, 0), device_mesh(torch.device("cpu"), world))
    finally:
        dist.destroy_process_group()
