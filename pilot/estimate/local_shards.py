"""The update of a fake FSDP estimate: the gradient clip and the optimizer step run on rank 0's local
shards directly.

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

The gradient norm is computed the same way: ``clip_grad_norm_`` over ``DTensor`` gradients runs
``_foreach_norm``, a stack and a norm on the local shards (scalars, then one all-reduce of a scalar)
and multiplies the local shards in place. ``LocalShardOptimizer.clip_gradients`` runs the same
kernels on the local gradients directly: the same allocations, without the sharding propagation
(1.8 s of a 7B estimate at 8 ranks, computed again at every rank count) and without the
whole-shape fake tensors that propagation makes (4 ranks and more: one whole-model-sized
tensor set the tracker would count in the first update, where real ranks hold nothing of the kind).
"""

from __future__ import annotations

from typing import Any

import torch


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """A ``DTensor``'s local shard itself (the storage the sharded kernels write; ``to_local().detach()``
    is the same storage through two dispatches per tensor, 0.3 s a step at 7B), any other tensor detached."""
    from torch.distributed.tensor import DTensor  # only sharded estimates need it (~0.7 s to import)

    return tensor._local_tensor if isinstance(tensor, DTensor) else tensor.detach()  # noqa: SLF001


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

    def clip_gradients(self, max_norm: float) -> torch.Tensor:
        """Stands in for ``Trainer.clip_gradients``: the norm of rank 0's local gradients (on a fake
        process group the values are not computed, only allocated) and the in-place clip of them."""
        held = [_local(param.grad) for param, _ in self.pairs if param.grad is not None]
        trained = [local for param, local in self.pairs if param.grad is not None]
        for local, grad in zip(trained, held, strict=True):
            local.grad = grad
        try:
            return torch.nn.utils.clip_grad_norm_(trained, max_norm, foreach=True)  # as on CUDA
        finally:
            for local in trained:
                local.grad = None
