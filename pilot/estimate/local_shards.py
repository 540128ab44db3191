"""The update of a fake FSDP estimate: the optimizer steps rank 0's local shards directly, and
``DTensor``'s sharding propagation of the gradient norm is cached before anything is measured.

Under FSDP2 every parameter and gradient is a ``DTensor`` sharded on dim 0 (``Shard(0)``), and an
optimizer step is elementwise: ``DTensor``'s dispatch runs each of the optimizer's (foreach)
kernels on the local shards and wraps the results, which allocates exactly what the same kernels
allocate on the local tensors. Its sharding propagation for a foreach kernel over every
parameter, though, costs seconds per kernel on its first call at each mesh size (7B, 8 ranks:
~11 s of a ~20 s estimate, and every rank count of the choice sheet pays it again).
``LocalShardOptimizer`` runs the configured optimizer (same class, same param groups) over the
local shards, with the sharded gradients' local tensors as its gradients: the same allocations
for the tracker, without the propagation. Checked against the real ``DTensor`` step on gloo
ranks (``tests/test_fsdp_estimate.py``, to the byte). Used by the fake estimate only: a run,
and a measured estimate, step the ``DTensor`` optimizer.

The gradient norm (``clip_grad_norm_`` over ``DTensor`` gradients) stays on ``DTensor``. The first
time a shape meets an operation, ``DTensor`` propagates its sharding by running the operation on
fake tensors of the *whole* shape; under the estimate's own fake mode the tracker counts those
(4 ranks and more: one whole-model-sized tensor set in the first update's optimizer step, where
real ranks hold nothing of the kind). ``warm_gradient_norm`` runs that propagation once, outside
the tracker, on zero gradients it then drops.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def _local(tensor: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor  # only sharded estimates need it (~0.7 s to import)

    return tensor.to_local().detach() if isinstance(tensor, DTensor) else tensor.detach()


class LocalShardOptimizer:
    """Stands in for ``optimizer`` in ``Trainer.apply_update``: ``step``, ``zero_grad``,
    ``param_groups`` and ``state`` (the local optimizer's)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        from torch.distributed.tensor import DTensor, Shard

        for group in optimizer.param_groups:
            for param in group["params"]:
                if isinstance(param, DTensor) and any(p != Shard(0) for p in param.placements):
                    raise ValueError(f"a parameter placed {param.placements}: only Shard(0) steps locally")
        self.sharded = optimizer
        self.pairs = [(p, _local(p)) for group in optimizer.param_groups for p in group["params"]]
        local_of = {id(p): local for p, local in self.pairs}
        groups = [{**group, "params": [local_of[id(p)] for p in group["params"]]} for group in optimizer.param_groups]
        self.local = type(optimizer)(groups)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.local.param_groups

    @property
    def state(self) -> Any:
        return self.local.state

    def step(self, closure: Any = None) -> Any:
        for param, local in self.pairs:
            local.grad = None if param.grad is None else _local(param.grad)
        self.sharded._opt_called = True  # noqa: SLF001 - what the LR scheduler reads to know a step ran
        try:
            return self.local.step(closure)
        finally:
            for _, local in self.pairs:
                local.grad = None  # the sharded gradients own that memory

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.sharded.zero_grad(set_to_none=set_to_none)


def warm_gradient_norm(model: torch.nn.Module) -> None:
    """Compute the gradient norm once on zero gradients (untracked: call it outside the tracker), so
    that ``DTensor``'s sharding propagation of it is cached before the measured updates."""
    trained = [p for p in model.parameters() if p.requires_grad]
    for param in trained:
        param.grad = torch.zeros_like(param)
    torch.nn.utils.clip_grad_norm_(trained, math.inf)
    for param in trained:
        param.grad = None
