"""The CPUs this process may use and how busy the machine is: torch-free, so the recap and the
estimate workers size their processes with it as ``engine.threads`` sizes torch's threads.

``cpu_budget``: the affinity mask, the cgroup's CPU quota, SLURM's ``SLURM_CPUS_PER_TASK`` and a
launcher's ``cpus_per_task``, the smallest wins. ``busy_elsewhere``: cores other processes keep
busy (/proc/stat over a short window, this process's own time taken out).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "<quota> <period>" or "max <period>"


def affinity_cores() -> int:
    """Cores this process may run on (a container's or a SLURM job's share), not the host's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def cgroup_quota(path: Path = CGROUP_CPU_MAX) -> int | None:
    """Whole CPUs the cgroup's quota allows (at least 1), None when unlimited or unreadable."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, int(int(quota) // int(period)))


def cpu_budget(launcher_cpus: int | None = None) -> tuple[int, str]:
    """CPUs this process may use, and what limits them."""
    cores, source = affinity_cores(), "usable cores"
    limits = [(cgroup_quota(), "the cgroup's CPU quota")]
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if slurm.isdigit():
        limits.append((int(slurm), "SLURM_CPUS_PER_TASK"))
    if launcher_cpus:
        limits.append((int(launcher_cpus), "the launcher's cpus_per_task"))
    for limit, name in limits:
        if limit is not None and 0 < limit < cores:
            cores, source = limit, name
    return cores, source


def _cpu_times() -> tuple[float, float, float]:
    """(busy, total) jiffies of the whole machine from /proc/stat, and this process's own."""
    fields = [float(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    own = sum(float(v) for v in Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[11:15])
    return sum(fields) - idle, sum(fields), own


def busy_elsewhere(window_s: float = 0.25) -> float | None:
    """Cores kept busy by other processes during ``window_s`` (None where /proc is not there)."""
    try:
        busy0, total0, own0 = _cpu_times()
        time.sleep(window_s)
        busy1, total1, own1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return None
    machine_cores = os.cpu_count() or 1
    if total1 <= total0:
        return None
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0) * machine_cores
