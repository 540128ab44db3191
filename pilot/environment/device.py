"""1. The device the run uses (``DeviceFacts``): what the precision and attention requirements are judged against.

Detected from this process, or injected (a catalog GPU, a simulated GPU in tests)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

import torch

from pilot.rental.requirements import KNOWN_CAPABILITY, catalog_capability, parse_capability, supports


@dataclass
class DeviceFacts:
    """The device the run uses: what the precision and attention requirements are judged against."""

    kind: str  # "cpu", "cuda" (NVIDIA) or "rocm" (AMD)
    name: str  # torch.cuda.get_device_name(), or the CPU
    capability: str | None = None  # "8.0" (NVIDIA compute capability) or "gfx942" (AMD); None: CPU
    memory_bytes: int | None = None  # device memory (host memory on a CPU)
    count: int = 1  # visible devices of this kind
    bf16: bool = True  # bf16 autocast runs natively (CPU: always, in software where needed)
    tf32: bool = False  # TF32 tensor cores (NVIDIA >= 8.0)
    fp8: bool = False  # fp8 matmuls (NVIDIA >= 8.9, AMD gfx942)
    simulated: bool = False  # injected (tests, a catalog GPU), not detected on this machine

    @classmethod
    def detect(cls, device: torch.device) -> DeviceFacts:
        if device.type != "cuda":
            return cls("cpu", _cpu_name(), None, _host_memory(), os.cpu_count() or 1, True, False, False)
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        rocm = torch.version.hip is not None
        capability = getattr(props, "gcnArchName", "").split(":")[0] if rocm else f"{props.major}.{props.minor}"
        parsed = parse_capability(capability)
        try:  # torch's own answer, without counting emulation (torch >= 2.3)
            bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:
            bf16 = bool(supports(parsed, "bf16"))
        return cls(
            "rocm" if rocm else "cuda",
            props.name,
            capability,
            int(props.total_memory),
            torch.cuda.device_count(),
            bool(bf16),
            bool(supports(parsed, "tf32")),
            bool(supports(parsed, "fp8")),
        )

    @classmethod
    def from_catalog(cls, name: str, device_name: str = "", memory_gib: float | None = None) -> DeviceFacts:
        """A catalog GPU as the step would see it (``KNOWN_CAPABILITY``), to judge a config against it."""
        capability = catalog_capability(name, device_name)
        if capability is None:
            raise KeyError(f"no known compute capability for {name!r}: one of {', '.join(KNOWN_CAPABILITY)}")
        return cls(
            "rocm" if capability.vendor == "amd" else "cuda",
            device_name or name,
            KNOWN_CAPABILITY.get(name, KNOWN_CAPABILITY.get(device_name)),
            int(memory_gib * 2**30) if memory_gib else None,
            1,
            bool(supports(capability, "bf16")),
            bool(supports(capability, "tf32")),
            bool(supports(capability, "fp8")),
            simulated=True,
        )

    def describe(self) -> str:
        where = f"{self.name} ({self.kind}" + (f", {parse_capability(self.capability)}" if self.capability else "")
        return where + (", simulated)" if self.simulated else ")")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def free_bytes(device: torch.device) -> int | None:
    """Memory a process can still take on ``device``: the GPU's free bytes (CUDA), else the host's available
    memory (what the kernel gives before it has to reclaim or kill); None when it cannot be read."""
    try:
        if device.type == "cuda":
            return int(torch.cuda.mem_get_info(device)[0])
        import psutil  # noqa: PLC0415 - a dependency of pilot's; read only here

        return int(psutil.virtual_memory().available)
    except (RuntimeError, OSError, ValueError, ImportError):
        return None
