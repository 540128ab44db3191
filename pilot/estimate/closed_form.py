"""The model states from shapes alone: what the tracked estimate must equal to the byte.

Parameters and gradients are counted per tensor; AdamW's state is two moments per trained
parameter plus one float32 step per tensor, SGD's one momentum buffer. Under FSDP2 rank 0 holds
``ceil(dim0 / N)`` rows of every tensor (dim 0 padded to a multiple of the N ranks), so the
sharded terms are exact too, and the padding is stated.
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from pilot.config.values import enum_value


def rank0_numel(param: torch.Tensor, world: int) -> int:
    """Rank 0's share of a parameter under FSDP2: dim 0 padded to a multiple of the ranks, then split."""
    if param.dim() == 0:
        return 1
    rows = -(-param.shape[0] // world)
    return rows * (param.numel() // max(1, param.shape[0]))


def sharded_closed_form(params: list[torch.Tensor], trained: list[torch.Tensor], world: int) -> dict[str, int]:
    """Rank 0's parameter and gradient bytes from shapes alone (FSDP2 shards dim 0, padded), and, when
    sharded, the padding FSDP adds over all ranks (one rank: the whole tensors)."""
    local = {id(p): rank0_numel(p, world) for p in params}
    form = {
        "parameters": sum(local[id(p)] * p.element_size() for p in params),
        "gradients": sum(local[id(p)] * p.element_size() for p in trained),
    }
    if world > 1:  # the bytes FSDP adds over all ranks to make dim 0 divisible
        form["padding"] = sum((local[id(p)] * world - p.numel()) * p.element_size() for p in params)
    return form


def optimizer_closed_form(cfg: DictConfig, trained: list[torch.Tensor], numels: list[int]) -> int:
    """Optimizer state from counts alone (``numels``: what this rank holds of each trained tensor):
    AdamW keeps two moments per parameter plus one step scalar (float32) per tensor; SGD with
    momentum one buffer per parameter."""
    moments = sum(n * p.element_size() for p, n in zip(trained, numels, strict=True))
    if enum_value(cfg.optim.name) == "sgd":
        return moments if float(cfg.optim.momentum) > 0 else 0
    return 2 * moments + 4 * len(trained)


def closed_forms(cfg: DictConfig, params: list[torch.Tensor], world: int) -> tuple[dict[str, int], dict[str, int]]:
    """(rank 0's states at ``world`` ranks, the whole model's): parameters, gradients, optimizer state."""
    trained = [p for p in params if p.requires_grad]

    def states(ranks: int) -> dict[str, int]:
        local = [rank0_numel(p, ranks) for p in trained]
        return {
            **sharded_closed_form(params, trained, ranks),
            "optimizer_state": optimizer_closed_form(cfg, trained, local),
        }

    return states(world), states(1)
