"""Whether this machine can hold the run's model at all, before anything runs: a pilot or a training run
holds the parameters, their gradients and the optimizer's state on real tensors (activations come on top).
``model.d_model=16384`` on a 24 GiB host built the model, allocated until the kernel refused, and failed
after its run directory existed; the same memory sized by ``mode=estimate`` allocates nothing."""

from __future__ import annotations

import torch

from pilot.config.values import enum_value, select
from pilot.engine.sharding import is_sharded
from pilot.environment.device import free_bytes
from pilot.text_table import byte_size
from pilot.validation.adapter_config import adapter_settings_if_any
from pilot.validation.on_meta import model_on_meta
from pilot.validation.problems import Problem

STATES = {"adamw": 2, "sgd": 1}  # optimizer buffers per trained parameter (SGD: momentum only when > 0)


def _room(device_type: str) -> int | None:
    """What the device can hold: the host's available memory, or a GPU's whole memory (its free bytes would
    create a CUDA context in the process that validates, a sweep's launcher included: none is made here)."""
    if device_type != "cuda":
        return free_bytes(torch.device(device_type))
    try:
        return int(torch.cuda.get_device_properties(0).total_memory)
    except (RuntimeError, AssertionError):
        return None


def check_host_memory(cfg, device_type: str, problems: list[Problem], overrides: list[str] = ()) -> None:
    """Refuse a pilot or training run whose model states alone (weights; for trained parameters their
    float32 gradients and optimizer state) need more than the device has free; named by the model settings
    the line typed (``model.d_model=16384``), else by the model."""
    if enum_value(select(cfg, "mode")) not in ("pilot", "train") or problems:
        return
    room = _room(device_type)
    model = model_on_meta(cfg) if room is not None else None
    if model is None:
        return
    name = str(enum_value(select(cfg, "optim.name")) or "adamw")
    states = STATES.get(name, 2) if name != "sgd" or float(select(cfg, "optim.momentum") or 0) > 0 else 0
    parameters = list(model.parameters())
    # an adapter (LoRA) freezes the base and trains a few small matrices: its base's weights are what count,
    # the adapter's own states too small to decide a refusal; without one, what the model leaves trainable
    adapted = adapter_settings_if_any(cfg) is not None
    trained = 0 if adapted else sum(p.numel() for p in parameters if p.requires_grad)
    weights = sum(p.numel() * p.element_size() for p in parameters)
    need = weights + trained * 4 * (1 + states)
    replicas = int(select(cfg, "distributed.replicas") or 1)
    if is_sharded(cfg):  # FSDP: each rank holds its share; on one host the shares add up to the whole
        need = need if device_type == "cpu" else need / replicas
    elif device_type == "cpu":  # DDP on one host: every replica holds the whole model states
        need *= replicas
    if need <= room:
        return
    name_of, largest = max(model.named_parameters(), key=lambda named: named[1].numel())
    share = largest.numel() / max(1, sum(p.numel() for p in parameters))
    biggest = (  # a table one setting sizes (positions by data.max_len): named where it is most of the model
        f" (its largest tensor, {name_of} of shape {tuple(largest.shape)}, holds {share:.0%} of them)"
        if share >= 0.5 and len(parameters) > 1
        else ""
    )
    count = f"{sum(p.numel() for p in parameters):,} parameters"
    typed = [o.lstrip("+~").split("=", 1) for o in overrides if o.lstrip("+~").startswith("model") and "=" in o]
    key, value = "model", count
    if typed:  # the settings that sized it, as typed; the last one's value as the config holds it
        key = " ".join([*(f"{k}={v}" for k, v in typed[:-1]), typed[-1][0]])
        value = select(cfg, typed[-1][0]) if "." in typed[-1][0] else typed[-1][1]
    problems.append(
        Problem(
            key,
            value,
            (f"the model it builds has {count}: " if typed else "")
            + f"its weights, the float32 gradients of its {trained:,} trained parameters and {name}'s {states} state "
            f"buffer(s) alone need {byte_size(need)}{biggest}, "
            f"and this {device_type} has {byte_size(room)} {'in all' if device_type == 'cuda' else 'free'}: the run "
            "holds them on real tensors, activations "
            "on top. Fix: pilot a smaller configuration here (fewer layers, a narrower model) and size this one "
            "with mode=estimate, which allocates nothing",
        )
    )
