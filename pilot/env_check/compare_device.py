"""The device against the plan and the pilot's: the GPU model and count, the precision it supports, the
attention kernels, the distributed backend."""

from __future__ import annotations

from typing import Any

from pilot.config.values import enum_value
from pilot.env_check.difference import Difference
from pilot.env_check.run_dir import PilotRun, multi_gpu
from pilot.environment.device import DeviceFacts


def compare_device(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """The GPU planned (or the pilot's GPU) against the one here."""
    device = DeviceFacts(**here["device"])
    planned = run.planned
    pilot_device = DeviceFacts(**run.facts["device"])
    if planned:
        return _compare_plan(planned, device)
    if pilot_device.kind != "cpu" and pilot_device.name != device.name:
        return [
            Difference(
                "GPU model",
                pilot_device.name,
                device.name,
                "the pilot's measurements (memory, time per update) were made on another GPU",
                True,
            )
        ]
    if pilot_device.kind == "cpu":
        return [
            Difference(
                "GPU plan",
                "none recorded (no chosen rental in memory_estimate.json)",
                device.describe(),
                "nothing to compare the GPU with",
                False,
            )
        ]
    return []


def _compare_plan(planned: dict[str, Any], device: DeviceFacts) -> list[Difference]:
    """The rental the choice sheet chose against the GPUs here."""
    affects = "the choice sheet's memory fit and time per update were made for that GPU"
    wanted = f"{planned['count']} x {planned['gpu']}"
    if device.kind == "cpu":
        return [Difference("GPU", f"{wanted} planned", "no GPU visible", affects, True)]
    name = planned.get("device_name") or ""
    found = []
    if name and name.lower() not in device.name.lower():
        found.append(
            Difference(
                "GPU model",
                f"{wanted} planned ('{name}')",
                f"{device.count} x {device.name}",
                affects + "; kernels and numerics differ by architecture",
                True,
            )
        )
    elif not name:
        found.append(
            Difference(
                "GPU model",
                f"{wanted} planned (no device_name in its catalog entry)",
                device.name,
                "cannot be compared: add device_name to the catalog entry",
                False,
            )
        )
    if device.count < planned["count"]:
        found.append(
            Difference(
                "GPU count",
                planned["count"],
                device.count,
                "fewer GPUs than planned: the effective batch or the time per update changes",
                True,
            )
        )
    return found


def compare_numerics(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """The precision the config needs, TF32 on fp32 matmuls."""
    found = []
    device = DeviceFacts(**here["device"])
    precision = str(enum_value(run.cfg.precision.dtype))
    for dtype in ("bf16", "fp8"):
        if precision == dtype and not getattr(device, dtype):
            found.append(
                Difference(
                    f"precision {dtype}",
                    "supported",
                    f"unsupported on {device.describe()}",
                    f"precision.dtype={dtype} cannot run here",
                    True,
                )
            )
    numerics, before = here["numerics"], run.facts.get("numerics", {})
    tf32_here = device.tf32 and (
        numerics["tf32_matmul"]
        or numerics["float32_matmul_precision"] != "highest"
        or numerics.get("tf32_override") == "1"
    )
    tf32_pilot = bool(before.get("tf32")) and (
        before.get("tf32_matmul") or before.get("float32_matmul_precision", "highest") != "highest"
    )
    if precision == "fp32" and tf32_here and not tf32_pilot:
        found.append(Difference("fp32 matmuls", "fp32", "TF32", "results differ from the pilot's at ~1e-3", True))
    return found


def compare_attention(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """Kernels the pilot had (same kind of device) or that the requirements expect, unavailable here."""
    found = []
    before, now = run.facts.get("attention", {}), here["attention"]
    if not now.get("examined"):
        return [
            Difference(
                "attention",
                "examined",
                f"not examined ({now.get('reason')})",
                "the model could not be built here (see the target lines)",
                False,
            )
        ]
    expected = {r["feature"] for r in run.facts.get("requirements", [])}
    for index, probe in enumerate(now.get("probes", [])):
        available = {n for n, b in probe["backends"].items() if b["available"]}
        call = now["calls"][index]
        label = f"attention call {index + 1} ({call['query']} {call['dtype']})"
        if not available:
            found.append(Difference(label, "a kernel", "no kernel runs it", "the model cannot run here", True))
            continue
        old = before.get("probes", [])[index] if index < len(before.get("probes", [])) else None
        same_kind = old is not None and old["device"].split(":")[0] == probe["device"].split(":")[0]
        if same_kind:
            lost = sorted(n for n, b in old["backends"].items() if b["available"] and n not in available)
            if lost:
                found.append(
                    Difference(
                        label,
                        "kernels " + ", ".join(sorted(n for n, b in old["backends"].items() if b["available"])),
                        "without " + ", ".join(lost),
                        "attention runs another kernel: memory, speed and the last bits of results",
                        True,
                    )
                )
            if old["selected"] != probe["selected"]:
                found.append(
                    Difference(
                        f"{label}: kernel selected",
                        old["selected"],
                        probe["selected"],
                        "memory, speed and the last bits of results",
                        True,
                    )
                )
        elif probe["device"].startswith("cuda"):
            for feature, kernel in (("flash_attention", "flash"), ("mem_efficient_attention", "mem_efficient")):
                if feature in expected and kernel not in available:
                    found.append(
                        Difference(
                            f"{label}: {kernel} attention",
                            "expected by the requirements",
                            f"unavailable ({probe['backends'][kernel]['reason']})",
                            f"falls back to {probe['selected']}: more memory and time than the choice sheet's",
                            True,
                        )
                    )
    return found


def compare_distributed(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    now = here["distributed"]
    if now["initialises"]:
        return []
    needed = multi_gpu(run) or now["configured"] != "auto"
    return [
        Difference(
            f"distributed backend {now['backend']}",
            "initialises" if run.facts.get("distributed", {}).get("initialises") else "not used",
            f"does not initialise ({now.get('error')})",
            "DDP over several GPUs cannot start" if needed else "unused (one GPU, one replica)",
            needed,
        )
    ]
