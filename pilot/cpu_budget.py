"""The CPUs this process may use and how busy the machine is: torch-free, so the recap and the
estimate workers size their processes with it as ``engine.threads`` sizes torch's threads.

``cpu_budget``: the affinity mask, the cgroup's CPU quota, SLURM's ``SLURM_CPUS_PER_TASK`` and a
launcher's ``cpus_per_task``, the smallest wins. ``busy_elsewhere``: the cores this process may run on that other processes keep
busy (/proc/stat since the latest sample or over 0.25 s, this process's and its children's time
taken out).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

CGROUP_MOUNT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def affinity_cores() -> int:
    """Cores this process may run on (a container's or a SLURM job's share), not the host's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def own_cgroups(controller: str) -> list[tuple[Path, int]]:
    """This process's cgroup directories that may limit ``controller`` ("cpu", "memory"), innermost
    first, each group above it too (a parent's limit applies as well), with the cgroup version: v2's
    unified hierarchy (``mount`` itself, or its ``unified`` folder on a hybrid host), v1's controller
    mount (``cpu,cpuacct``, ``cpu``). In a container's own cgroup namespace the group is the mount."""
    mount = CGROUP_MOUNT
    try:
        lines = PROC_CGROUP.read_text().strip().splitlines()
    except OSError:
        return []
    unified = mount if (mount / "cgroup.controllers").exists() else mount / "unified"
    found: list[tuple[Path, int]] = []
    for line in lines:
        number, controllers, relative = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            roots, version = [unified], 2
        elif controller in controllers.split(","):
            roots, version = [mount / controllers, mount / controller], 1
        else:
            continue
        for root in (root for root in roots if root.is_dir()):
            group = root / relative.strip("/")
            found += [
                (directory, version)
                for directory in (group, *group.parents)
                if directory == root or root in directory.parents
            ]
            break
    return found


def cgroup_quota(path: Path | None = None) -> int | None:
    """Whole CPUs the cgroup quota allows (at least 1), None when unlimited or unreadable: the smallest
    over this process's groups and those above them (``own_cgroups``: v2's ``cpu.max``, v1's
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, as Docker's ``--cpus`` sets either); ``path``: one v2
    ``cpu.max`` file."""
    groups = [(path, 2)] if path is not None else own_cgroups("cpu")
    quotas = [quota for group, version in groups if (quota := _quota(group, version)) is not None]
    return min(quotas, default=None)


def _quota(group: Path, version: int) -> int | None:
    try:
        if version == 2:
            quota, period = (group if group.name == "cpu.max" else group / "cpu.max").read_text().split()[:2]
        else:
            quota, period = ((group / f"cpu.cfs_{name}_us").read_text().strip() for name in ("quota", "period"))
    except (OSError, ValueError):
        return None
    if quota == "max" or quota.startswith("-"):  # v1 writes -1 for no quota
        return None
    try:
        return max(1, int(int(quota) // int(period)))
    except (ValueError, ZeroDivisionError):
        return None


_said: set[str] = set()  # SLURM_CPUS_PER_TASK values and launcher asks already said to be ignored


def cpu_budget(launcher_cpus: int | None = None) -> tuple[int, str]:
    """CPUs this process may use, and what limits them."""
    cores, source = affinity_cores(), "usable cores"
    limits = [(cgroup_quota(), "the cgroup's CPU quota")]
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if slurm.strip().isdigit() and int(slurm) > 0:
        limits.append((int(slurm), "SLURM_CPUS_PER_TASK"))
    elif slurm and slurm not in _said:  # set by hand, or garbled: ignored, and said once
        _said.add(slurm)
        logging.getLogger("pilot").warning(
            "SLURM_CPUS_PER_TASK=%r is not a whole number of CPUs above 0: ignored (the CPUs come from the "
            "affinity mask and the cgroup's quota). Fix: unset it, or set the CPUs this process may use.",
            slurm,
        )
    if launcher_cpus:
        limits.append((int(launcher_cpus), "the launcher's cpus_per_task"))
    for limit, name in limits:
        if limit is not None and 0 < limit < cores:
            cores, source = limit, name
    if launcher_cpus and int(launcher_cpus) > cores:  # a local launcher's ask this machine cannot give
        source += f" (the launcher's cpus_per_task={int(launcher_cpus)} asks more than the {cores} this job may use)"
        if f"launcher:{launcher_cpus}" not in _said:
            _said.add(f"launcher:{launcher_cpus}")
            logging.getLogger("pilot").warning(
                "hydra.launcher.cpus_per_task=%d: this job may use %d CPU(s) here (%s), so it runs on those. "
                "Fix: hydra.launcher.cpus_per_task=%d or fewer",
                int(launcher_cpus),
                cores,
                source.split(" (")[0],
                cores,
            )
    return cores, source


def _jiffies(pid: str = "self") -> tuple[float, float]:
    """CPU time of process ``pid`` (utime + stime) and of the children it reaped (cutime + cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return float(fields[11]) + float(fields[12]), float(fields[13]) + float(fields[14])


def _children_jiffies() -> float:
    """CPU time of this process's live children (a child started early, nice or not, is not another's load)."""
    total = 0.0
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            pids = listing.read_text().split()
        except OSError:  # the thread ended in between
            continue
        for pid in pids:
            try:
                total += sum(_jiffies(pid))
            except (OSError, ValueError, IndexError):  # ended in between: its time is now in our cutime
                continue
    return total


def _own_and_children_jiffies() -> float:
    """This process's CPU time with its children's, live or reaped; read again if a child was reaped
    in between (its time would be in neither reading, or in both)."""
    for _ in range(3):
        reaped = _jiffies()[1]
        children = _children_jiffies()
        own, reaped_after = _jiffies()
        if reaped_after == reaped:
            break
    return own + reaped_after + children


def _usable_cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return None


def _cpu_times() -> tuple[float, float, float]:
    """(busy, total) jiffies of the CPUs this process may run on (``usable_jiffies``), and this process's
    own with its children's."""
    return (*usable_jiffies(Path("/proc/stat").read_text(), _usable_cpus()), _own_and_children_jiffies())


def usable_jiffies(stat: str, usable: set[int] | None) -> tuple[float, float]:
    """(busy, total) jiffies in ``stat`` (/proc/stat's text) of the CPUs in ``usable`` (the affinity mask:
    other CPUs' load does not slow this process), of the whole machine where the mask is unknown."""
    busy = total = 0.0
    for line in stat.splitlines():
        name, *values = line.split()
        if not name.startswith("cpu"):
            break  # the cpu lines come first
        if (usable is None) != (name == "cpu") or (usable is not None and int(name[3:]) not in usable):
            continue  # the aggregate line only without a mask; with one, its CPUs' lines
        fields = [float(v) for v in values]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        busy, total = busy + sum(fields) - idle, total + sum(fields)
    return busy, total


def _sample() -> tuple[int, float, tuple[float, float, float]] | None:
    """(this process's id, the time, ``_cpu_times``), None where /proc cannot be read."""
    try:
        return os.getpid(), time.monotonic(), _cpu_times()
    except (OSError, ValueError, IndexError):
        return None


_latest = _sample()  # taken when the process imports this module; then at the end of each measurement


def busy_elsewhere(window_s: float = 0.25, reuse_s: float = 0.0) -> float | None:
    """Cores this process may run on (``_cpu_times``) kept busy by other processes (this one and its
    children taken out) over at least
    ``window_s``: since the latest sample (this module's import, or the end of the last measurement)
    when it is ``window_s`` to ``reuse_s`` seconds old -- the work done since stands in for the
    wait -- else over a new window of ``window_s``. None where /proc is not there."""
    global _latest
    start = _latest  # a forked process's is its parent's: not its own to compare with
    if start is None or start[0] != os.getpid() or not window_s <= time.monotonic() - start[1] <= reuse_s:
        start = _sample()
        time.sleep(window_s)
    _latest = end = _sample()
    if start is None or end is None:
        return None
    (busy0, total0, own0), (busy1, total1, own1) = start[2], end[2]
    usable = _usable_cpus()
    cores = len(usable) if usable is not None else (os.cpu_count() or 1)
    if total1 <= total0:
        return None
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0) * cores
