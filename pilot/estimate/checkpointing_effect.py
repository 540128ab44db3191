"""No silent no-op: ``memory=checkpointing`` must lower the estimated activations.

A model can claim activation checkpointing (``supports_activation_checkpointing = True``, or a
``gradient_checkpointing_enable`` that returns without effect) and recompute nothing; the run then
reports checkpointing "on" while keeping every activation. The estimate runs the same update with
checkpointing off and compares the activations held at the forward/backward peak of a steady update:
with checkpointing they must be fewer, or the check fails and names both numbers.
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


def checkpointing_effect(cfg: DictConfig, task: TaskData, estimate: MemoryEstimate) -> str | None:
    """None when checkpointing is off; else what it saves, or ``CheckpointingIneffective``."""
    if not cfg.memory.activation_checkpointing:
        return None
    without = estimate_memory(cfg, task, activation_checkpointing=False)
    on, off = activation_bytes(estimate), activation_bytes(without)
    if on >= off:
        raise CheckpointingIneffective(
            f"memory.activation_checkpointing=true changes nothing: the estimated activations of a "
            f"steady update are {on:,} B with it and {off:,} B without, so {cfg.model._target_} claims "
            "support but recomputes nothing. Fix: make the model read self.activation_checkpointing (or "
            "its gradient_checkpointing_enable work), or memory=none."
        )
    return f"activation checkpointing holds {on:,} B of activations instead of {off:,} B"
