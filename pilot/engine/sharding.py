"""FSDP2: parameters, gradients and optimizer state sharded over the ranks (``distributed.strategy=fsdp``).

PyTorch's own ``fully_shard`` (``torch.distributed.fsdp``), applied as torchtitan does: once per
block (a transformer layer), then on the root, which takes what no block holds (embeddings, final
norm, head). Each block's parameters are gathered for its forward and freed after it
(``reshard_after_forward``), gathered again for its backward, and its gradients reduce-scattered:
a rank holds 1/N of every state plus the blocks it is working on.

Which modules are blocks: ``distributed.fsdp.blocks`` (class names) when set; else the model's own
``_no_split_modules`` (what Hugging Face declares for every architecture: exactly its layers); else
every module held in an ``nn.ModuleList`` (pilot's tiny GPT, most hand-written transformers). The
engine (``Trainer``) and the per-rank memory estimate (``pilot.estimate``) share this function, so
the estimate shards exactly what a run shards.
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import nn

from pilot.config.values import enum_value
from pilot.errors import ConfigRefused

PARAM_DTYPES = {"bf16": torch.bfloat16}


def is_sharded(cfg: DictConfig) -> bool:
    return enum_value(cfg.distributed.strategy) == "fsdp"


def block_modules(model: nn.Module, names: list[str]) -> list[nn.Module]:
    """The modules sharded one unit each, in the order the model holds them (see the module doc)."""
    wanted = set(names) or set(getattr(model, "_no_split_modules", None) or ())
    if not wanted:
        inner = getattr(model, "base_model", None)  # a peft model: its base declares the layers
        wanted = set(getattr(getattr(inner, "model", None), "_no_split_modules", None) or ())
    if wanted:
        blocks = [m for m in model.modules() if type(m).__name__ in wanted]
        if names and not blocks:
            raise ConfigRefused(f"distributed.fsdp.blocks={list(names)}: {no_such_blocks(model)}")
        return blocks
    return [child for m in model.modules() if isinstance(m, nn.ModuleList) for child in m]


def no_such_blocks(model: nn.Module) -> str:
    """Why ``distributed.fsdp.blocks`` names that no module of ``model`` has are refused, with its classes."""
    present = sorted({type(m).__name__ for m in model.modules()})
    return (
        f"no module of {type(model).__name__} has that class. Fix: name one of its classes "
        f"({', '.join(present[:12])}{', ...' if len(present) > 12 else ''}), or [] to let pilot find its layers."
    )


def named_blocks_missing(model: nn.Module, names: list[str]) -> bool:
    """True when ``names`` (distributed.fsdp.blocks) are set and no module of ``model`` has one of them."""
    return bool(names) and not any(type(m).__name__ in set(names) for m in model.modules())


def mixed_precision(cfg: DictConfig):
    """bf16: gathered parameters and compute in bf16, gradients reduced in fp32 (the shards stay fp32).
    fp32: None (FSDP's default, everything fp32). fp16 is refused by validation."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    dtype = PARAM_DTYPES.get(enum_value(cfg.precision.dtype))
    return MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32) if dtype is not None else None


def shard_model(model: nn.Module, cfg: DictConfig, mesh) -> int:
    """Apply ``fully_shard`` to each block, then to the root, in place; returns the number of blocks."""
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

    settings = cfg.distributed.fsdp
    options = {"mesh": mesh, "reshard_after_forward": bool(settings.reshard_after_forward)}
    policy = mixed_precision(cfg)
    if policy is not None:
        options["mp_policy"] = policy
    if bool(settings.cpu_offload):
        options["offload_policy"] = CPUOffloadPolicy()
    blocks = block_modules(model, list(settings.blocks))
    for block in blocks:
        fully_shard(block, **options)
    fully_shard(model, **options)
    return len(blocks)


def device_mesh(device: torch.device, world_size: int):
    """The one-dimensional mesh of the ranks (the process group must exist)."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(device.type, (world_size,))


def full_value(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's whole value (a sharded gradient norm), any other tensor as it is."""
    full = getattr(tensor, "full_tensor", None)
    return full() if callable(full) else tensor


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The whole model's state on rank 0's CPU, gathered from every rank (a collective: all ranks call
    it; the others get an empty dict). An unsharded model: its ``state_dict()`` detached on the CPU."""
    if not any(hasattr(p, "full_tensor") for p in model.parameters()):
        return {k: v.detach().cpu() for k, v in model.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def whole_training_state(model: nn.Module, optimizer, trained_only: bool) -> tuple[dict, dict]:
    """(model state, optimizer state) of the whole model on rank 0's CPU, the optimizer's keyed by
    parameter name (``torch.distributed.checkpoint.state_dict``): a collective under FSDP — every rank
    calls it, the others get empty dicts — and the plain state, by name, without FSDP. By name, a
    checkpoint loads at any number of ranks. ``trained_only``: frozen parameters (an adapter's base) left out."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True, ignore_frozen_params=trained_only)
    return get_state_dict(model, optimizer, options=options)


def load_whole_training_state(model: nn.Module, optimizer, model_state: dict, optimizer_state: dict) -> None:
    """The inverse of ``whole_training_state``, at this run's number of ranks (each takes its shard)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    trained = {name for name, p in model.named_parameters() if p.requires_grad}
    strict = trained == {name for name, _ in model.named_parameters()}  # an adapter: the base comes from the config
    set_state_dict(
        model,
        optimizer,
        model_state_dict=model_state,
        optim_state_dict=optimizer_state,
        options=StateDictOptions(full_state_dict=True, strict=strict),
    )


def local_values(tree):
    """Each DTensor in a (nested) state replaced by this rank's shard (checks that read every value)."""
    if hasattr(tree, "to_local"):
        return tree.to_local()
    if isinstance(tree, dict):
        return {key: local_values(value) for key, value in tree.items()}
    return tree
