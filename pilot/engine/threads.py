"""CPU threads per process, chosen from what will run at once (``run.threads=0``, the default).

torch's own default is every core of the machine, whatever else runs: two replicas, or the jobs of
a parallel sweep, each take all of them and fight over the cores (a default ``mode=train`` ran 6x
slower with one other busy process). The default here divides the CPUs this process may use
(``pilot.cpu_budget``: its affinity mask, the cgroup's CPU quota, SLURM's ``SLURM_CPUS_PER_TASK``,
and the submitit launcher's ``cpus_per_task`` for a sweep) by the processes that share them (the
replicas); a pilot leaves one core of them to its checks' process, which works beside it.

A single process (one replica) also leaves out the cores other processes keep busy when it starts
(``cpu_budget.busy_elsewhere``: /proc/stat since the process started, this process's own time and
its children's taken out): two threads beside one busy process made an update 4x slower than one
thread. The count fixes the order of float reductions, so two runs of one config on a machine
loaded differently may differ in the last bits; run.json records the count and why, a resumed run
keeps its checkpoint's count (bit for bit), and a set ``run.threads`` is never changed. The pilot
also says when the machine is busy (``load_note``): its measured times are slower than on an idle
machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

import pilot.cpu_budget as cpus
from pilot.cpu_budget import cpu_budget

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


def launcher_cpus() -> int | None:
    """A sweep job's ``hydra.launcher.cpus_per_task`` (submitit, local or SLURM); None otherwise."""
    if not HydraConfig.initialized():
        return None
    hydra = HydraConfig.get()
    if hydra.mode != RunMode.MULTIRUN:
        return None
    value = hydra.launcher.get("cpus_per_task")
    return int(value) if isinstance(value, int) and value > 0 else None


BESIDE_THE_PILOT = "the pilot's checks process beside it"  # pilot_run's child: its warm-up, the picture


def choose_threads(
    configured: int, replicas: int, launcher: int | None = None, busy: float | None = None, beside: str = ""
) -> ThreadChoice:
    """``configured`` > 0 as set; 0: the CPU budget divided by the replicas that share it, less one core
    where ``beside`` names a process that works beside this one on one core (the pilot's checks process
    imports torch and ``torch._dynamo`` while the pilot runs its data checks, and draws phases.png
    while the pilot estimates; the reload and resume it runs while the pilot waits: two threads beside
    it made the default pilot 8.1-8.5 s instead of 6.0-6.4 s on 2 cores), never more than torch's own
    default (physical cores: hyper-threads slow a matmul down). A single process also leaves the cores
    other processes keep ``busy`` (measured once, at its start)."""
    if configured > 0:
        return ThreadChoice(configured, f"run.threads={configured}", busy)
    cores, source = cpu_budget(launcher)
    if TORCH_DEFAULT < cores:
        cores, source = TORCH_DEFAULT, "torch's default: physical cores or OMP_NUM_THREADS"
    share = cores // max(1, replicas)
    aside = 1 if beside and share > 1 else 0  # one core: shared with that process, not left to it
    count = max(1, share - aside)
    reason = f"run.threads=0: {cores} CPU(s) ({source}) / {replicas} replica(s)"
    if beside:
        reason += f", less 1 for {beside}" if aside else f" (one core, shared with {beside})"
    if replicas == 1 and busy is not None and busy >= 0.5 and round(busy) > 0:
        free = max(1, cpus.affinity_cores() - round(busy) - aside)  # busy: of the cores this process may run on
        if free < count:
            count, reason = free, f"{reason}, less {busy:.1f} core(s) other processes kept busy at the start"
    return ThreadChoice(count, reason, busy)


def load_note(busy: float | None, cores: int) -> str | None:
    """A warning when other processes already keep cores busy: measured times will be slower."""
    if busy is None or busy < 0.5:
        return None
    return (
        f"the machine is busy: other processes kept {busy:.1f} of its cores busy when the pilot started "
        f"(this process may use {cores}); times and throughput measured now are slower than on an idle "
        "machine. Fix: run the pilot when the machine is idle, or set run.threads to the cores left free."
    )
