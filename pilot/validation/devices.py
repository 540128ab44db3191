"""Settings checked against the machine and each other: the precision (and the scaler it needs),
the device, the backend, the replicas and what the sharded strategy (FSDP) can do today."""

from __future__ import annotations

import torch
from omegaconf import ListConfig

from pilot.config.values import enum_value, select
from pilot.cpu_budget import affinity_cores
from pilot.engine.distributed import BUSY_PORT_FIX, launched_externally, port_in_use
from pilot.engine.sharding import named_blocks_missing, no_such_blocks
from pilot.validation.numbers import THREADS_PER_CORE
from pilot.validation.on_meta import model_on_meta
from pilot.validation.problems import Problem


def check_precision(cfg, device_type: str, problems: list[Problem]) -> None:
    dtype = enum_value(select(cfg, "precision.dtype"))
    scaler = select(cfg, "precision.grad_scaler")
    if dtype == "fp16" and not scaler:
        problems.append(
            Problem(
                "precision.grad_scaler",
                scaler,
                "fp16 needs a gradient scaler or small gradients underflow to zero. "
                "Fix: precision.grad_scaler=true, or precision=bf16.",
            )
        )
    if dtype in ("fp32", "bf16") and scaler:
        problems.append(
            Problem(
                "precision.grad_scaler",
                scaler,
                f"loss scaling is only for fp16; with {dtype} it hides nothing and "
                "changes the update. Fix: precision.grad_scaler=false.",
            )
        )
    if enum_value(select(cfg, "model.dtype")) == "fp16":  # every mode trains it (an estimate of training too)
        _check_fp16_weights_train(cfg, dtype, problems)
    if dtype == "bf16" and device_type == "cuda" and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
        problems.append(
            Problem("precision.dtype", dtype, "this GPU has no bf16 support. Fix: precision=fp16 or precision=fp32.")
        )


def _check_fp16_weights_train(cfg, dtype: str, problems: list[Problem]) -> None:
    """model.dtype=fp16: the model's own weights must stay frozen (an adapter's are made fp32 by peft).
    Without an adapter they all train; with one, the modules it trains in full and the biases it trains
    are the model's fp16 tensors."""
    scaler = ", and the gradient scaler refuses fp16 gradients" if dtype == "fp16" else ""
    why = f"AdamW's small updates round away and the loss turns nan within a few updates{scaler}"
    if select(cfg, "adapter.r") is None:
        problems.append(
            Problem(
                "model.dtype",
                "fp16",
                f"the trained parameters would be fp16: {why}. Fix: model.dtype=fp32 with precision=fp16 or bf16 "
                "(mixed precision: fp32 weights, half-precision compute), or an adapter (adapter=lora: the fp16 model "
                "stays frozen); model.dtype=bf16 runs, but bf16 weights lose small updates too (the pilot's "
                "first_step measures how many)",
            )
        )
        return
    bias = enum_value(select(cfg, "adapter.bias"))
    trained = [  # (key, value, its setting that trains nothing of the model)
        ("adapter.modules_to_save", select(cfg, "adapter.modules_to_save"), "null"),  # copies of fp16 modules
        ("adapter.bias", None if bias in (None, "none") else bias, "none"),
    ]
    for key, value, off in trained:
        if value:
            problems.append(
                Problem(
                    key,
                    value,
                    f"with model.dtype=fp16 it trains fp16 tensors of the model (the adapter's own are fp32): {why}. "
                    f"Fix: model.dtype=fp32 or bf16, or {key}={off}",
                )
            )


def check_strategy(cfg, problems: list[Problem]) -> None:
    """FSDP: what the engine and the estimate support (pilot.engine.sharding)."""
    if enum_value(select(cfg, "distributed.strategy")) != "fsdp":
        return
    mode, dtype = enum_value(select(cfg, "mode")), enum_value(select(cfg, "precision.dtype"))
    if dtype == "fp16":
        problems.append(
            Problem(
                "precision.dtype",
                dtype,
                "FSDP computes in bf16 (its MixedPrecisionPolicy) or fp32; fp16's gradient scaler is not "
                "built for sharded gradients here. Fix: precision=bf16 or precision=fp32.",
            )
        )
    blocks = select(cfg, "distributed.fsdp.blocks")
    if isinstance(blocks, ListConfig) and len(blocks) and (model := model_on_meta(cfg)) is not None:
        if named_blocks_missing(model, [str(name) for name in blocks]):  # the run would refuse it once built
            problems.append(Problem("distributed.fsdp.blocks", list(blocks), no_such_blocks(model)))
    offload_said = any(p.key == "distributed.fsdp.cpu_offload" for p in problems)  # '2': said as no switch
    if select(cfg, "distributed.fsdp.cpu_offload") and mode == "estimate" and not offload_said:
        problems.append(
            Problem(
                "distributed.fsdp.cpu_offload",
                True,
                "the estimate runs on the CPU and cannot tell offloaded shards (host memory) from the GPU's. "
                "Fix: distributed.fsdp.cpu_offload=false (the estimate then counts the shards on the GPU).",
            )
        )


def check_devices(cfg, device_type: str, problems: list[Problem]) -> None:
    """The devices and processes a run starts, against what this machine has. mode=estimate starts none
    (its N ranks are estimated as one, on the CPU, whatever run.device says): the GPU campaign's own config
    (run.device=cuda, distributed.backend=nccl) is estimated on a machine without a GPU, as it must be."""
    if enum_value(select(cfg, "mode")) == "estimate":
        return
    backend = enum_value(select(cfg, "distributed.backend"))
    replicas = select(cfg, "distributed.replicas") or 1
    requested = enum_value(select(cfg, "run.device"))
    if requested == "cuda" and not torch.cuda.is_available():
        problems.append(
            Problem("run.device", requested, "no CUDA device is visible. Fix: run.device=auto or run.device=cpu.")
        )
    if backend == "nccl" and device_type != "cuda":
        problems.append(
            Problem(
                "distributed.backend",
                backend,
                "NCCL needs CUDA devices. Fix: distributed.backend=gloo (or auto) on CPU.",
            )
        )
    if device_type == "cuda" and replicas > max(1, torch.cuda.device_count()):
        problems.append(
            Problem(
                "distributed.replicas",
                replicas,
                f"only {torch.cuda.device_count()} GPU(s) visible. Fix: fewer replicas, or run.device=cpu.",
            )
        )
    port = select(cfg, "distributed.master_port") or 0
    if replicas > 1 and port and not launched_externally() and (busy := port_in_use(int(port))):
        problems.append(Problem("distributed.master_port", port, f"{busy}: {BUSY_PORT_FIX}"))
    if device_type == "cpu" and replicas > THREADS_PER_CORE * affinity_cores():
        problems.append(
            Problem(
                "distributed.replicas",
                replicas,
                f"{replicas} processes on {affinity_cores()} usable CPU core(s) only wait for "
                f"each other. Fix: at most {THREADS_PER_CORE * affinity_cores()} replicas on this "
                "machine, or a GPU machine.",
            )
        )
