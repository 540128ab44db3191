"""What a SLURM partition can give one job, read from ``sinfo`` before a sweep is submitted.

A request no node of the partition can meet was sbatch's error after the launch (``partition=nosuch``,
``mem_gb`` past the node, ``gpus_per_node`` on a CPU partition: "a sweep job left submitit no result") or,
worse, accepted and left pending for ever with nothing said (``cpus_per_task`` or ``nodes`` past the
partition's: squeue's reason ``PartitionConfig``; a time limit past the partition's). Each is refused before
any job is submitted, naming the key, its value, what the partition has and the fix. Where ``sinfo`` is
missing or fails, nothing is checked here (sbatch still says what it refuses).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

SINFO = ["sinfo", "--noheader", "--format=%P|%a|%D|%c|%m|%G|%l"]
WAITS = "sbatch accepts it and the job waits for ever"


@dataclass(frozen=True)
class NodeGroup:
    """One line of ``sinfo``: nodes of a partition that share their size."""

    partition: str
    default: bool
    up: bool
    nodes: int
    cpus: int
    memory_mb: int
    gpus: int
    limit_min: float | None  # the partition's time limit; None: none


@dataclass(frozen=True)
class Request:
    """What one job of ``hydra.launcher`` asks of each of its nodes."""

    partition: str | None
    nodes: int
    tasks: int
    cpus_per_task: int
    mem_gb: float
    gpus: int
    timeout_min: float | None

    @property
    def cpus(self) -> int:
        return self.tasks * self.cpus_per_task


def cluster_groups(timeout_s: float = 10.0) -> list[NodeGroup] | None:
    """The cluster's partitions as ``sinfo`` lists them, or None where it cannot be asked."""
    try:
        done = subprocess.run(SINFO, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return read_groups(done.stdout)


def read_groups(text: str) -> list[NodeGroup]:
    groups = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 7 or not fields[0]:
            continue
        name, state, nodes, cpus, memory, gres, limit = fields
        groups.append(
            NodeGroup(
                partition=name.rstrip("*"),
                default=name.endswith("*"),
                up=state.strip().lower() == "up",
                nodes=_whole(nodes),
                cpus=_whole(cpus),
                memory_mb=_whole(memory),
                gpus=gpus_of(gres),
                limit_min=minutes_of(limit),
            )
        )
    return groups


def _whole(text: str) -> int:
    """``sinfo``'s count, ``"2+"`` (nodes of the line differ: the least of them) read as 2."""
    found = re.match(r"\s*(\d+)", text)
    return int(found.group(1)) if found else 0


def gpus_of(gres: str) -> int:
    """GPUs per node from ``sinfo``'s GRES (``gpu:8``, ``gpu:a100:4(S:0-1),gpu:v100:2``, ``(null)``)."""
    total = 0
    for item in re.split(r",(?![^()]*\))", gres):
        parts = item.split("(")[0].strip().split(":")
        if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def minutes_of(limit: str) -> float | None:
    """SLURM's time limit (``infinite``, ``1-00:00:00``, ``2:00:00``, ``30:00``) in minutes; None: none."""
    limit = limit.strip()
    found = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", limit)
    if not found:
        return None  # infinite, UNLIMITED, n/a
    days, first, second, third = (int(g) if g else 0 for g in found.groups())
    if found.group(4) is not None:  # [days-]hours:minutes:seconds
        return days * 1440 + first * 60 + second + third / 60
    if found.group(3) is not None:  # days-hours:minutes, or minutes:seconds
        return days * 1440 + first * 60 + second if found.group(1) else first + second / 60
    return days * 1440 + first * 60 if found.group(1) else float(first)  # days-hours, or minutes


def request_of(launcher: Any) -> Request:
    def number(key: str, default: float) -> Any:
        value = OmegaConf.select(launcher, key, default=None)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else default

    partition = OmegaConf.select(launcher, "partition", default=None)
    timeout = number("timeout_min", 0)
    return Request(
        partition=str(partition) if partition not in (None, "") else None,
        nodes=int(number("nodes", 1)),
        tasks=int(number("tasks_per_node", 1)),
        cpus_per_task=int(number("cpus_per_task", 1)),
        mem_gb=float(number("mem_gb", 0)),
        gpus=int(number("gpus_per_node", 0)),
        timeout_min=float(timeout) if timeout else None,
    )


def partition_problems(launcher: Any, groups: list[NodeGroup]) -> list[str]:
    """What of ``hydra.launcher``'s request no node of its partition can give, each with its fix."""
    if not groups:
        return []
    request, names = request_of(launcher), sorted({g.partition for g in groups})
    if request.partition is None:
        defaults = [g.partition for g in groups if g.default]
        if not defaults:
            return [
                f"hydra.launcher.partition=null: this cluster has no default partition, so sbatch refuses the job. "
                f"Fix: hydra.launcher.partition=<one of {', '.join(names)}>"
            ]
        name = defaults[0]
    elif request.partition not in names:
        return [
            f"hydra.launcher.partition={request.partition}: no such partition on this cluster (sinfo lists "
            f"{', '.join(names)}). Fix: hydra.launcher.partition={names[0]}"
            + (f", or null for its default ({d[0]})" if (d := [g.partition for g in groups if g.default]) else "")
        ]
    else:
        name = request.partition
    return _size_problems(request, name, [g for g in groups if g.partition == name], groups)


def _size_problems(request: Request, name: str, mine: list[NodeGroup], groups: list[NodeGroup]) -> list[str]:
    where, problems = f"partition {name!r}", []
    cpus, memory_mb, gpus = max(g.cpus for g in mine), max(g.memory_mb for g in mine), max(g.gpus for g in mine)
    if request.cpus > cpus:
        fix = (
            f"hydra.launcher.cpus_per_task={cpus // request.tasks}"
            if cpus >= request.tasks
            else f"hydra.launcher.tasks_per_node={cpus} (with distributed.replicas to match)"
        )
        problems.append(
            f"hydra.launcher.cpus_per_task={request.cpus_per_task} x tasks_per_node={request.tasks} asks "
            f"{request.cpus} CPUs of a node; the nodes of {where} have at most {cpus} (sinfo): {WAITS}. Fix: {fix}"
        )
    if request.mem_gb * 1024 > memory_mb > 0:
        problems.append(
            f"hydra.launcher.mem_gb={request.mem_gb:g}: the nodes of {where} have at most {memory_mb} MB "
            f"({memory_mb / 1024:.1f} GB, sinfo). Fix: hydra.launcher.mem_gb={memory_mb // 1024}"
        )
    if request.gpus > gpus:
        elsewhere = sorted({g.partition for g in groups if g.gpus >= request.gpus})
        problems.append(
            f"hydra.launcher.gpus_per_node={request.gpus}: the nodes of {where} have "
            + (f"at most {gpus} GPUs" if gpus else "no GPU")
            + " (sinfo's GRES). Fix: "
            + (f"hydra.launcher.partition={elsewhere[0]}, or " if elsewhere else "")
            + f"hydra.launcher.gpus_per_node={gpus}"
            + ("" if gpus else " with run.device=cpu")
        )
    limits = [g.limit_min for g in mine]
    if request.timeout_min is not None and None not in limits and request.timeout_min > max(limits):
        problems.append(
            f"hydra.launcher.timeout_min={request.timeout_min:g}: {where} limits a job to {max(limits):g} minutes "
            f"(sinfo): {WAITS}. Fix: hydra.launcher.timeout_min={int(max(limits))} (a job at its limit "
            "checkpoints and is requeued)"
        )
    if problems:
        return problems
    fitting = [
        g for g in mine if g.cpus >= request.cpus and g.memory_mb >= request.mem_gb * 1024 and g.gpus >= request.gpus
    ]
    available = sum(g.nodes for g in fitting)
    if request.nodes > available:
        return [
            f"hydra.launcher.nodes={request.nodes}: {where} has {available} node(s) with {request.cpus} CPU(s)"
            + (f" and {request.gpus} GPUs" if request.gpus else "")
            + f" (sinfo): {WAITS}. Fix: hydra.launcher.nodes={max(available, 1)} (distributed.replicas = nodes x "
            "tasks_per_node)"
        ]
    return []


def partition_down(launcher: Any, groups: list[NodeGroup]) -> str | None:
    """A warning where the job's partition exists but is not up: its jobs wait until it is."""
    request = request_of(launcher)
    name = request.partition or next((g.partition for g in groups if g.default), None)
    mine = [g for g in groups if g.partition == name]
    if mine and not any(g.up for g in mine):
        return f"partition {name!r} is not up (sinfo): the jobs wait until an administrator brings it up"
    return None
