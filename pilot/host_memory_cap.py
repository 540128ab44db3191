"""A CPU run's host memory as a limit its allocations meet, instead of the kernel's OOM killer.

On a CPU device every tensor is host memory. Past what the host has, Linux's OOM killer ends the
process with SIGKILL: no handler runs, the run's record stays "running", and the process killed
may be another one on the machine. With the data segment capped (``RLIMIT_DATA``: private writable
mappings, which every large ``malloc`` is) at this process's data now plus the memory available
(85% of ``MemAvailable``, or of a cgroup's limit less its usage when lower), an allocation beyond it
fails at once: PyTorch's CPU allocator raises its "can't allocate memory" ``RuntimeError``, Python
a ``MemoryError``, both recorded as out of memory (``pilot.errors.out_of_memory``), the step or
the phase named. Child processes (the checks' process, data loader workers) inherit the limit. A
lower limit already set (``ulimit -d``) is kept; a CUDA run's process is not capped (the driver's
host mappings are not tensors the pilot sizes). The cap and its reason go into run.json. Only
processes started by pilot's command line are capped (``enable``), for the length of a run
(``release_host_memory_cap`` puts the earlier limit back): code that calls pilot as a library keeps its own.
"""

from __future__ import annotations

import contextlib
import resource
import sys
from pathlib import Path

from pilot.cpu_budget import own_cgroups

GIB = 1024**3
SHARE_OF_ROOM = 0.85  # the rest for the kernel, the page cache this run reads, and other processes' growth
_set: dict | None = None  # the cap in force for the run under way (``release_host_memory_cap`` ends it)
_enabled = False  # by the command line's entry (``enable``): a library call (a test's process) is not capped
_before: tuple[int, int] | None = None  # the limits in force before this process's cap (``release``)


def enable() -> None:
    """Let ``cap_host_memory`` cap this process: pilot's command line does, for the runs it starts."""
    global _enabled
    _enabled = True


def _kib_field(text: str, name: str) -> int | None:
    for line in text.splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_room() -> int | None:
    """What this process's memory cgroup may still take: its limit less its usage (cgroup v2's
    ``memory.max``/``memory.current``, v1's ``memory.limit_in_bytes``/``memory.usage_in_bytes``), the
    least over its group and those above it (``cpu_budget.own_cgroups``; in a container's namespace,
    the mount itself)."""
    rooms = []
    for group, version in own_cgroups("memory"):
        files = ("memory.max", "memory.current") if version == 2 else ("memory.limit_in_bytes", "memory.usage_in_bytes")
        try:
            limit = (group / files[0]).read_text().strip()
            usage = int((group / files[1]).read_text())
            if limit != "max" and int(limit) < 1 << 60:  # no limit: "max" (v1 writes a page-rounded 2**63)
                rooms.append(int(limit) - usage)
        except (OSError, ValueError):
            continue
    return min(rooms, default=None)


def host_room() -> tuple[int, str] | None:
    """(bytes this process may still take, where that number comes from), None where unknown."""
    try:
        available = _kib_field(Path("/proc/meminfo").read_text(), "MemAvailable")
    except OSError:
        return None
    if available is None:
        return None
    room, source = available, "MemAvailable"
    cgroup = _cgroup_room()
    if cgroup is not None and cgroup < room:
        room, source = max(cgroup, 0), "its cgroup's memory limit less its usage"
    return room, source


def cap_host_memory(device_type: str, replicas: int = 1) -> dict | None:
    """Cap this process's data segment (see the module's text) for a run on ``device_type``; the cap as
    recorded (``limit_bytes``, ``why``), None where none is set (CUDA, not Linux, unknown room)."""
    global _set, _before
    # several replicas: not capped (spawned gloo ranks under the cap aborted with SIGABRT in CI, unrecorded)
    if _set is not None or not _enabled or device_type != "cpu" or replicas > 1 or not sys.platform.startswith("linux"):
        return _set
    room = host_room()
    try:
        data = _kib_field(Path("/proc/self/status").read_text(), "VmData")
    except OSError:
        data = None
    if room is None or data is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = data + int(room[0] * SHARE_OF_ROOM)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        _set = {"limit_bytes": soft, "why": "the data-segment limit this process was started with (ulimit -d)"}
        return _set
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):
        return None
    _before = (soft, hard)
    _set = {
        "limit_bytes": limit,
        "why": (
            f"this process's data ({data / GIB:.2f} GiB) + {SHARE_OF_ROOM:.0%} of the memory available when "
            f"the run started ({room[0] / GIB:.2f} GiB, {room[1]}): an allocation past it fails as out of memory, recorded, "
            "instead of the kernel's OOM killer ending the run unrecorded"
        ),
    }
    return _set


def release_host_memory_cap() -> None:
    """The run is over: the limit in force before it comes back (a process that goes on, an in-process
    sweep's next job or a caller of the command line's entry, is not held to this run's room)."""
    global _set, _before
    if _before is not None:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_DATA, _before)
    _set, _before = None, None
