"""The verdict on the facts: ``fail`` naming the requirement for what the config needs and the machine lacks,
``warn`` for what is unusual."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from pilot.checks.result import Finding
from pilot.environment.device import DeviceFacts
from pilot.environment.stack import major_minor
from pilot.rental.requirements import needs_text


def judge(cfg: DictConfig, facts: dict[str, Any]) -> tuple[list[Finding], list[Finding]]:
    """(fails, warnings): what the config needs and the machine lacks; what is unusual."""
    fails: list[Finding] = []
    warns: list[Finding] = []
    device = DeviceFacts(**facts["device"])
    precision = facts["precision"]
    if precision == "bf16" and not device.bf16:
        fails.append(
            Finding(
                f"precision.dtype=bf16 needs bf16 support ({needs_text('bf16')}); {device.describe()} has none",
                detail="Fix: precision=fp16 (with its gradient scaler: a different variant to "
                "pilot) or precision=fp32, or a GPU with bf16 (A100, L4, H100, ...)",
            )
        )
    if precision == "fp8" and not device.fp8:
        fails.append(
            Finding(f"precision.dtype=fp8 needs fp8 matmuls ({needs_text('fp8')}); {device.describe()} has none")
        )
    _judge_distributed(facts["distributed"], fails, warns)
    for target in facts["targets"]:
        if not target["imports"]:
            fails.append(
                Finding(
                    f"{target['key']}={target['target']}: "
                    + (
                        f"module {target.get('module')} does not import ({target.get('error')})"
                        if "has no attribute" not in str(target.get("error"))
                        else str(target.get("error"))
                    ),
                    detail="Fix: install the package that provides it, or correct the dotted path",
                )
            )
    _judge_attention(facts["attention"], fails, warns)
    _judge_cuda(facts, device, precision, warns)
    return fails, warns


def _judge_distributed(facts: dict[str, Any], fails: list[Finding], warns: list[Finding]) -> None:
    if facts["initialises"]:
        return
    needed = facts["configured"] != "auto" or facts["replicas"] > 1
    problem = (
        f"distributed.backend={facts['configured']} ({facts['backend']}) does not initialise here: {facts.get('error')}"
    )
    fix = (
        "Fix: distributed.backend=gloo (or auto) on a CPU machine, or run on a machine with CUDA GPUs"
        if facts["backend"] == "nccl"
        else "Fix: check the network interface gloo binds (GLOO_SOCKET_IFNAME)"
    )
    (fails if needed else warns).append(
        Finding(problem, detail=fix if needed else "unused here (1 replica), but the choice sheet's DDP rows need it")
    )


def _judge_attention(facts: dict[str, Any], fails: list[Finding], warns: list[Finding]) -> None:
    if not facts.get("examined"):
        warns.append(Finding(f"the model's attention was not examined: {facts.get('reason')}"))
        return
    for call, probe in zip(facts["calls"], facts["probes"]):
        if not any(b["available"] for b in probe["backends"].values()):
            reasons = "; ".join(f"{n}: {b['reason']}" for n, b in probe["backends"].items() if b["reason"])
            fails.append(
                Finding(
                    f"no attention kernel runs the model's call (query {call['query']}, "
                    f"{call['dtype']}) on {probe['device']}: {reasons}"
                )
            )


def _judge_cuda(facts: dict[str, Any], device: DeviceFacts, precision: str, warns: list[Finding]) -> None:
    runtime, driver_cuda = facts["cuda"]["runtime"], facts["cuda"]["driver"].get("cuda")
    if runtime and driver_cuda and major_minor(runtime) != major_minor(driver_cuda):
        warns.append(
            Finding(
                f"torch is built for CUDA {runtime} and the driver supports CUDA {driver_cuda}",
                detail="runs while the driver's CUDA is newer (minor-version compatibility); "
                "kernels compiled for another CUDA may differ in speed and numerics",
            )
        )
    numerics = facts["numerics"]
    if device.kind in ("cuda", "rocm") and not numerics["deterministic_algorithms"]:
        warns.append(
            Finding(
                f"deterministic algorithms are off on {device.name}",
                detail="atomics in scatter/index_add and cuBLAS reductions make reruns differ in "
                "the last bits; torch.use_deterministic_algorithms(True) with "
                "CUBLAS_WORKSPACE_CONFIG=:4096:8 makes them repeatable (slower)",
            )
        )
    tf32_on = (
        numerics["tf32_matmul"]
        or numerics["float32_matmul_precision"] != "highest"
        or numerics.get("tf32_override") == "1"
    )
    if precision == "fp32" and device.tf32 and tf32_on:
        warns.append(
            Finding(
                f"fp32 matmuls run in TF32 on {device.name} (10-bit mantissa)",
                detail="results differ from fp32 at ~1e-3; torch.set_float32_matmul_precision('highest') keeps fp32",
            )
        )
