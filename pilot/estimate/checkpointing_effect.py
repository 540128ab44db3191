"""No silent no-op: ``memory=checkpointing`` must lower the estimated activations and recompute.

A model can claim activation checkpointing (``supports_activation_checkpointing = True``, or a
``gradient_checkpointing_enable`` that returns without effect) and recompute nothing; the run then
reports checkpointing "on" while keeping every activation. The estimate runs the same update with
checkpointing off and compares the activations held at the forward/backward peak of a steady update:
with checkpointing they must be fewer, and the counted FLOPs of a micro-batch higher (the forward
recomputed in backward), or the check fails and names both numbers. The cost is counted, not timed:
on shared CPU cores a small model's time difference is noise; the pilot's steady_steps phase times
the update as configured.
"""

from __future__ import annotations

from omegaconf import DictConfig

from pilot.data.task import TaskData
from pilot.estimate.fake_tensor import STEADY, MemoryEstimate, estimate_memory
from pilot.estimate.refusal import EstimateRefused

FORWARD_BACKWARD = "forward/backward"


class CheckpointingIneffective(EstimateRefused):
    """memory.activation_checkpointing=true changes nothing the estimate can see."""


def activation_bytes(estimate: MemoryEstimate) -> int:
    """Activations held at the forward/backward peak of a steady update."""
    return int(estimate.phase(STEADY).moments[FORWARD_BACKWARD]["activations"])


def checkpointing_effect(
    cfg: DictConfig, task: TaskData, estimate: MemoryEstimate, without: MemoryEstimate | None = None
) -> str | None:
    """None when checkpointing is off; else what it saves, or ``CheckpointingIneffective``.
    ``without``: the same estimate with checkpointing off, when the caller has it."""
    if not cfg.memory.activation_checkpointing:
        return None
    without = without if without is not None else estimate_memory(cfg, task, activation_checkpointing=False)
    on, off = activation_bytes(estimate), activation_bytes(without)
    if on >= off:
        raise CheckpointingIneffective(
            f"memory.activation_checkpointing=true changes nothing: the estimated activations of a "
            f"steady update are {on:,} B with it and {off:,} B without, so {cfg.model._target_} claims "
            "support but recomputes nothing. Fix: make the model read self.activation_checkpointing (or "
            "its gradient_checkpointing_enable work), or memory=none."
        )
    extra = estimate.flops_per_micro_batch - without.flops_per_micro_batch
    if extra <= 0:
        raise CheckpointingIneffective(
            f"memory.activation_checkpointing=true recomputes nothing: {estimate.flops_per_micro_batch:,} FLOPs "
            f"per micro-batch with it, {without.flops_per_micro_batch:,} without, although the activations held "
            f"fell from {off:,} B to {on:,} B; what is not kept must be recomputed in backward. Fix: a "
            "checkpointing that recomputes (torch.utils.checkpoint), or memory=none."
        )
    share = extra / max(without.flops_per_micro_batch, 1)
    return (
        f"activation checkpointing holds {on:,} B of activations instead of {off:,} B and recomputes "
        f"{extra:,} FLOPs per micro-batch (+{share:.0%}, counted)"
    )
