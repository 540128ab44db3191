"""CPU threads per process, chosen from what will run at once (``run.threads=0``, the default).

torch's own default is every core of the machine, whatever else runs: two replicas, or the jobs of
a parallel sweep, each take all of them and fight over the cores (a default ``mode=train`` ran 6x
slower with one other busy process). The default here divides the CPUs this process may use --
its affinity mask, the cgroup's CPU quota, SLURM's ``SLURM_CPUS_PER_TASK``, and the submitit
launcher's ``cpus_per_task`` for a sweep -- by the processes that share them (the replicas).

A single process (one replica) also leaves out the cores other processes keep busy when it starts
(``busy_elsewhere``: /proc/stat over 0.25 s, this process's own time taken out): two threads
beside one busy process made an update 4x slower than one thread. The count fixes the order of
float reductions, so two runs of one config on a machine loaded differently may differ in the last
bits; run.json records the count and why, a resumed run keeps its checkpoint's count (bit for bit),
and a set ``run.threads`` is never changed. The pilot also says when the machine is busy
(``load_note``): its measured times are slower than on an idle machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "<quota> <period>" or "max <period>"
TORCH_DEFAULT = torch.get_num_threads()  # torch's own choice at start: physical cores, or OMP_NUM_THREADS


@dataclass(frozen=True)
class ThreadChoice:
    count: int  # torch CPU threads of this process
    reason: str  # where the count comes from, as run.json records it
    busy_elsewhere: float | None = None  # cores other processes kept busy at the start (measured; None: not)

    def as_dict(self) -> dict:
        return asdict(self)

    def resumed(self, count: int) -> ThreadChoice:
        """The choice after a resume set ``count`` (the checkpoint's, for run.threads=0)."""
        if count == self.count:
            return self
        reason = f"{self.reason}; resumed with the checkpoint's {count}, to continue bit for bit"
        return ThreadChoice(count, reason, self.busy_elsewhere)


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


def launcher_cpus() -> int | None:
    """A sweep job's ``hydra.launcher.cpus_per_task`` (submitit, local or SLURM); None otherwise."""
    if not HydraConfig.initialized():
        return None
    hydra = HydraConfig.get()
    if hydra.mode != RunMode.MULTIRUN:
        return None
    value = hydra.launcher.get("cpus_per_task")
    return int(value) if isinstance(value, int) and value > 0 else None


def choose_threads(
    configured: int, replicas: int, launcher: int | None = None, busy: float | None = None
) -> ThreadChoice:
    """``configured`` > 0 as set; 0: the CPU budget divided by the replicas that share it, never more
    than torch's own default (physical cores: hyper-threads slow a matmul down). A single process
    also leaves the cores other processes keep ``busy`` (measured once, at its start)."""
    if configured > 0:
        return ThreadChoice(configured, f"run.threads={configured}", busy)
    cores, source = cpu_budget(launcher)
    if TORCH_DEFAULT < cores:
        cores, source = TORCH_DEFAULT, "torch's default: physical cores or OMP_NUM_THREADS"
    count = max(1, cores // max(1, replicas))
    reason = f"run.threads=0: {cores} CPU(s) ({source}) / {replicas} replica(s)"
    if replicas == 1 and busy is not None and busy >= 0.5 and round(busy) > 0:
        free = max(1, cores - round(busy))
        if free < count:
            count, reason = free, f"{reason}, less {busy:.1f} core(s) other processes kept busy at the start"
    return ThreadChoice(count, reason, busy)


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


def load_note(busy: float | None, cores: int) -> str | None:
    """A warning when other processes already keep cores busy: measured times will be slower."""
    if busy is None or busy < 0.5:
        return None
    return (
        f"the machine is busy: other processes kept {busy:.1f} of its cores busy when the pilot started "
        f"(this process may use {cores}); times and throughput measured now are slower than on an idle "
        "machine. Fix: run the pilot when the machine is idle, or set run.threads to the cores left free."
    )
