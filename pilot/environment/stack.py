"""2. The software stack: Python, torch and its build, CUDA runtime and driver, cuDNN, NCCL; the numerics
settings this process has enabled (TF32, determinism)."""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from pilot.environment.device import DeviceFacts


def _version_text(value: int | None, kind: str) -> str | None:
    """cuDNN's integer version as text: 8907 -> 8.9.7, 90100 -> 9.1.0."""
    if value is None:
        return None
    if kind == "cudnn":
        major, rest = (value // 10000, value % 10000) if value >= 90000 else (value // 1000, value % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return f"{value // 1000}.{(value % 1000) // 10}"  # CUDA driver API: 12040 -> 12.4


def _driver() -> dict[str, str | None]:
    """The NVIDIA driver's version and the CUDA version it supports (libcuda's cuDriverGetVersion)."""
    found: dict[str, str | None] = {"version": None, "cuda": None}
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9][0-9.]+)", text)
        found["version"] = match.group(1) if match else text.splitlines()[0].strip()
    except OSError:
        pass
    try:
        number = ctypes.c_int()
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(number)) == 0:
            found["cuda"] = _version_text(number.value, "cuda")
    except (OSError, AttributeError):
        pass
    return found


def stack_facts() -> dict[str, Any]:
    """Python, torch and its build, CUDA runtime and driver, cuDNN, NCCL."""
    cuda_available = torch.cuda.is_available()
    cudnn = None
    if torch.backends.cudnn.is_available():
        cudnn = _version_text(torch.backends.cudnn.version(), "cudnn")
    nccl = None
    if cuda_available and dist.is_nccl_available():
        try:
            raw = torch.cuda.nccl.version()
            nccl = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
        except (RuntimeError, AttributeError):
            nccl = None
    build = (
        f"ROCm {torch.version.hip}"
        if torch.version.hip
        else (f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU only")
    )
    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "platform": platform.platform(),
        },
        "torch": {
            "version": torch.__version__,
            "build": build,
            "cuda": torch.version.cuda,
            "hip": torch.version.hip,
            "git": getattr(torch.version, "git_version", None),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
        },
        "cuda": {
            "available": cuda_available,
            "runtime": torch.version.cuda,
            "driver": _driver() if torch.version.cuda else {"version": None, "cuda": None},
            "cudnn": cudnn,
            "nccl": nccl,
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        },
        "gpus": [_gpu(i) for i in range(torch.cuda.device_count())] if cuda_available else [],
    }


def _gpu(index: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(index)
    arch = getattr(props, "gcnArchName", "")
    return {
        "index": index,
        "name": props.name,
        "memory_bytes": int(props.total_memory),
        "capability": arch.split(":")[0] if torch.version.hip else f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
    }


def numerics_facts(device: DeviceFacts) -> dict[str, Any]:
    """What the device supports and what this process has enabled (TF32, determinism)."""
    return {
        "bf16": device.bf16,
        "tf32": device.tf32,
        "fp8": device.fp8,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "tf32_override": os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"),
    }


def major_minor(version: str | None) -> tuple[int, ...] | None:
    """(major, minor) of a version string (``12.4.1`` -> (12, 4)); None when it holds no number."""
    if not version:
        return None
    numbers = re.findall(r"\d+", str(version))
    return tuple(int(n) for n in numbers[:2]) if numbers else None
