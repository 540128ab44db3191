"""Memory counters around one phase, with the same boundary on every device and rank.

CUDA (PyTorch caching allocator): synchronise, read the baseline allocated
bytes and reset the peak statistics at the start; synchronise at the end and
read allocated, reserved, peak allocated and peak reserved. Allocated (live
tensors) and reserved (held by the allocator) are different quantities and
are kept in separate columns, never summed.

Host (every device, the only memory on CPU): the process's resident set size
before and after the phase, and its high-water mark *during* the phase. On Linux the mark is reset at the phase start by writing
5 to /proc/self/clear_refs; where that is impossible the column says the peak
is since process start (``rss_peak_scope``).

The counters' names are phases.csv's memory columns (``pilot.phases.rows``).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import torch

_CLEAR_REFS = Path("/proc/self/clear_refs")


def _read_hwm_bytes() -> int | None:
    """Peak RSS of the process: getrusage's ru_maxrss (KiB on Linux, bytes on macOS).

    On Linux it follows the high-water mark that clear_refs resets, and costs
    about a microsecond (reading /proc/self/status costs about half a millisecond).
    """
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


_STATM = Path("/proc/self/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss_bytes(process: psutil.Process) -> int:
    """Resident set size now. Linux: /proc/self/statm (a few microseconds; psutil's call
    also re-reads /proc/self/stat, which costs far more in a multi-threaded process)."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return process.memory_info().rss


def _reset_hwm() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


@dataclass
class PhaseMeasurement:
    duration_s: float = float("nan")
    memory: dict[str, object] = field(default_factory=dict)


class MemoryProbe:
    """Measure a phase: ``start()`` before, ``stop()`` after (both synchronise the device)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.process = psutil.Process()
        self._started = 0.0
        self._hwm_reset = False

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self) -> dict[str, object]:
        self._sync()
        memory: dict[str, object] = {}
        if self.device.type == "cuda":
            memory["mem_baseline_bytes"] = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        memory["rss_baseline_bytes"] = current_rss_bytes(self.process)
        self._hwm_reset = _reset_hwm()
        self._started = time.perf_counter()
        return memory

    def stop(self, start_memory: dict[str, object]) -> PhaseMeasurement:
        self._sync()
        duration = time.perf_counter() - self._started
        memory = dict(start_memory)
        if self.device.type == "cuda":
            memory.update(
                mem_allocated_bytes=torch.cuda.memory_allocated(self.device),
                mem_reserved_bytes=torch.cuda.memory_reserved(self.device),
                mem_peak_allocated_bytes=torch.cuda.max_memory_allocated(self.device),
                mem_peak_reserved_bytes=torch.cuda.max_memory_reserved(self.device),
            )
        # host memory of the process, on every device (a GPU job has host memory too)
        rss = current_rss_bytes(self.process)
        peak = _read_hwm_bytes()
        memory.update(
            rss_bytes=rss,
            rss_peak_bytes=max(peak, rss) if peak is not None else None,
            rss_peak_scope=("phase" if self._hwm_reset else "process") if peak is not None else "unavailable",
        )
        return PhaseMeasurement(duration_s=duration, memory=memory)


def peak_memory() -> dict[str, int | None]:
    """Whole-process peaks for a run's record: host peak RSS, and CUDA peak allocated/reserved."""
    peaks: dict[str, int | None] = {"rss_peak_bytes": _read_hwm_bytes()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        peaks["cuda_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        peaks["cuda_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return peaks
