"""Updates that round away in half-precision weights, measured at one optimizer step.

A weight stored in bf16 keeps 8 significant bits: at 0.02, neighbouring values are 7.8e-5 apart, so
an AdamW step of lr 2e-5 (its first step moves each weight by about lr) leaves it where it was.
Training bf16 weights (``model.dtype=bf16``) then learns from a fraction of its updates, silently:
the loss still moves a little. What this measures: a sample of every trained half-precision tensor's
elements (evenly spaced, up to ``SAMPLE`` each) read before and after one ``optimizer.step()``
(PyTorch's step hooks), and among those whose gradient was not zero, the share the step left
unchanged. fp32 weights are not sampled (their spacing, 1.9e-9 at 0.02, keeps such updates).
"""

from __future__ import annotations

import torch

HALF_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}  # as model.dtype names them
HALF = tuple(HALF_NAMES)
SAMPLE = 4096  # elements per tensor
ROUNDED_AWAY_WARN = 0.25  # a quarter of the updates lost: the run learns from three quarters at most


def _half_trained(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad and p.dtype in HALF]


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """An FSDP DTensor's shard on this rank, else the tensor."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


class RoundedUpdates:
    """Hooks on ``optimizer`` that measure its next step; ``share`` once it ran (None before, or where
    no trained tensor is half precision)."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        self.tensors = _half_trained(model)
        self.dtype = HALF_NAMES[self.tensors[0].dtype] if self.tensors else None
        self.moved = self.kept = 0
        self.ran = False
        self._before: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self._hooks = []
        if self.tensors:
            self._hooks = [
                optimizer.register_step_pre_hook(self._read_before),
                optimizer.register_step_post_hook(self._read_after),
            ]

    def _read_before(self, *_: object) -> None:
        self._before = []
        for tensor in self.tensors:
            if tensor.grad is None:
                continue
            flat, grad = _local(tensor).detach().reshape(-1), _local(tensor.grad).reshape(-1)
            if flat.numel() == 0:
                continue
            index = torch.arange(0, flat.numel(), max(1, flat.numel() // SAMPLE), device=flat.device)
            self._before.append((flat, index, flat[index].clone(), grad[index] != 0))

    def _read_after(self, *_: object) -> None:
        for flat, index, values, nonzero in self._before:
            self.kept += int(((flat[index] == values) & nonzero).sum())
            self.moved += int(nonzero.sum())
        self._before, self.ran = [], True
        self.close()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []

    @property
    def share(self) -> float | None:
        return self.kept / self.moved if self.ran and self.moved else None

    def said(self, lr: float) -> str:
        """One line on what the step kept, with the fix where it lost at least ``ROUNDED_AWAY_WARN``."""
        if self.share is None:
            return ""
        line = (
            f"{self.share:.0%} of the {self.dtype} weights' updates with a non-zero gradient left them unchanged "
            f"(rounded away; {self.moved:,} sampled elements, lr {lr:.3g})"
        )
        if self.share < ROUNDED_AWAY_WARN:
            return line
        return (
            f"{line}: the run learns from a fraction of its updates. Fix: model.dtype=fp32 with precision=bf16 "
            "(autocast: bf16 matmuls on fp32 weights and optimizer state), or a larger optim.lr"
        )


def half_weights_hint(model: torch.nn.Module) -> str:
    """Why a handful of examples may not be learnt: the trained weights are half precision (the
    pilot's first_step measures how many updates round away); "" when they are fp32."""
    half = _half_trained(model)
    if not half:
        return ""
    name = HALF_NAMES[half[0].dtype]
    return (
        f" Its trained weights are {name}: an update smaller than half the distance to the next {name} value "
        "rounds away (the phases' first_step row measures the share). Fix: model.dtype=fp32 with precision=bf16."
    )
