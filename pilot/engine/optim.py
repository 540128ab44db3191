"""Optimizer and learning-rate schedule from ``cfg.optim``.

Schedule (per update u, 0-based): linear warm-up to ``lr`` over
``warmup_updates``, then constant, cosine or linear decay to
``lr * min_lr_ratio`` at the last update (cosine as in Loshchilov & Hutter,
SGDR, 2017). A ``LambdaLR`` keeps the state a checkpoint can restore.
"""

from __future__ import annotations

import math

import torch

from pilot.config.values import enum_value
from pilot.data.task import ContractError


def build_optimizer(optim_cfg, model: torch.nn.Module, foreach: bool | None = None) -> torch.optim.Optimizer:
    """``foreach=None`` is PyTorch's default (the multi-tensor kernels on CUDA, the per-tensor
    loop on CPU); the memory estimator asks for ``True`` to mirror a GPU on the CPU."""
    params = trained_parameters(model)
    if enum_value(optim_cfg.name) == "sgd":
        return torch.optim.SGD(
            params, lr=optim_cfg.lr, momentum=optim_cfg.momentum, weight_decay=optim_cfg.weight_decay, foreach=foreach
        )
    return torch.optim.AdamW(
        params, lr=optim_cfg.lr, betas=tuple(optim_cfg.betas), weight_decay=optim_cfg.weight_decay, foreach=foreach
    )


def trained_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters that require a gradient; a model without any is refused (it would train nothing,
    and every step that builds an optimizer would fail on it)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        count = sum(p.numel() for p in model.parameters())
        raise ContractError(
            f"{type(model).__name__} has no trainable parameter (all {count:,} parameters have "
            "requires_grad=False): nothing would be trained. Fix: leave the parameters to train with "
            "requires_grad=True (freeze only a part, e.g. a backbone), or train an adapter (adapter=lora)."
        )
    half = [name for name, p in model.named_parameters() if p.requires_grad and p.dtype == torch.float16]
    if half:
        raise ContractError(
            f"{len(half)} trained parameter(s) of {type(model).__name__} are fp16 ({', '.join(half[:3])}"
            f"{', ...' if len(half) > 3 else ''}): AdamW's small updates round away in fp16 and the gradient "
            "scaler refuses fp16 gradients. Fix: keep what trains in fp32 (model.dtype=fp32 with precision=fp16 "
            "is mixed precision), or freeze it."
        )
    return params


def lr_factor(update: int, total_updates: int, warmup_updates: int, schedule: str, min_lr_ratio: float) -> float:
    """Multiplier of the peak lr for update ``update`` (0-based)."""
    if update < warmup_updates:
        return (update + 1) / warmup_updates
    if schedule == "constant":
        return 1.0
    decay_updates = max(1, total_updates - warmup_updates - 1)
    progress = min(1.0, (update - warmup_updates) / decay_updates)
    if schedule == "cosine":
        shape = 0.5 * (1.0 + math.cos(math.pi * progress))
    else:
        shape = 1.0 - progress
    return min_lr_ratio + (1.0 - min_lr_ratio) * shape


def build_scheduler(
    optim_cfg, optimizer: torch.optim.Optimizer, total_updates: int
) -> torch.optim.lr_scheduler.LambdaLR:
    schedule = enum_value(optim_cfg.schedule)

    def factor(update: int) -> float:
        return lr_factor(update, total_updates, optim_cfg.warmup_updates, schedule, optim_cfg.min_lr_ratio)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def lr_from_this_schedule(scheduler: torch.optim.lr_scheduler.LambdaLR) -> None:
    """The next update's lr from this run's schedule at the restored step, as ``LambdaLR`` computes it
    (the same float when the schedule is the checkpoint's). The optimizer's state held the lr the
    checkpoint's schedule had set: a resume forced over another budget trained its first update at it
    while its record said the new schedule took effect there."""
    for group, base, factor in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in scheduler.optimizer.param_groups]
