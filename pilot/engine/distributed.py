"""Data-parallel replicas through torch.distributed: gloo on CPU, NCCL on CUDA.

Two ways in, one code path:
- ``torchrun --nproc-per-node N -m pilot distributed.replicas=N`` (or a SLURM
  launch) sets RANK/WORLD_SIZE; ``init_from_env`` joins that group.
- Otherwise ``spawn`` starts N local processes with ``torch.multiprocessing``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pilot.engine.preemption import LAUNCHER_PID
from pilot.errors import ConfigRefused, PilotError, user_error
from pilot.startup_signals import LAUNCHER_GONE


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def resolve_backend(backend: str, device: torch.device) -> str:
    if backend != "auto":
        return backend
    return "nccl" if device.type == "cuda" else "gloo"


def export_slurm_environment() -> None:
    """Inside a multi-task SLURM job (one process per task), set RANK, WORLD_SIZE, LOCAL_RANK,
    MASTER_ADDR and MASTER_PORT from SLURM's variables (submitit's helper) so that
    ``init_from_env`` can join the group. Single-task jobs are left alone."""
    if "RANK" in os.environ or int(os.environ.get("SLURM_NTASKS", "1")) <= 1:
        return
    from submitit.helpers import TorchDistributedEnvironment

    TorchDistributedEnvironment().export(set_cuda_visible_devices=False)


def launched_externally() -> bool:
    export_slurm_environment()
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init_from_env(backend: str, device: torch.device) -> DistContext:
    ctx = DistContext(
        rank=int(os.environ["RANK"]),
        world_size=int(os.environ["WORLD_SIZE"]),
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
    )
    if ctx.is_distributed and not dist.is_initialized():
        dist.init_process_group(resolve_backend(backend, device), rank=ctx.rank, world_size=ctx.world_size)
    return ctx


def port_in_use(port: int) -> str | None:
    """Why ``port`` cannot be the rendezvous port here (another process listens on it), or None."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as torch's store binds it
        try:
            sock.bind(("", port))
        except OSError as error:
            said = error.strerror or str(error)
            return (
                f"{said} (another process listens on it: another run's ranks perhaps)"
                if error.errno == errno.EADDRINUSE
                else f"{said} (this process cannot listen on it)"
            )
    return None


BUSY_PORT_FIX = (
    "the ranks could not meet there. Fix: distributed.master_port=0 (a free port, the default) or another port."
)


def refuse_busy_port(port: int) -> None:
    """A port given in ``distributed.master_port`` that another process took since validation: refused by
    name before any rank starts (the first rank's rendezvous failed with torch's EADDRINUSE traceback)."""
    if port and (busy := port_in_use(port)):
        raise ConfigRefused(f"distributed.master_port={port}: {busy}: {BUSY_PORT_FIX}")


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_REFUSAL = "PILOT_RANK_REFUSAL"  # where rank 0 writes the PilotError that stopped it (``spawn``)


def launcher_gone() -> str | None:
    """What ended without a word, as the record names it: the process that spawned this rank, once it is
    ending or has ended (kill -9 included: torch then sends the rank SIGINT, which no one typed), or what
    a sweep job's watcher found gone (``sweep_signals.watch_launcher``: the launching process or the
    job's submitit controller); else None. A rank is re-parented some milliseconds after that SIGINT:
    the launcher's own state (a zombie, or gone) tells before."""
    if stopped := os.environ.get(LAUNCHER_GONE, ""):  # a sweep job's watcher stopped it
        return f"the launching process (pid {stopped})" if stopped.isdigit() else stopped
    launcher = os.environ.get(LAUNCHER_PID, "")
    if not launcher.isdigit():
        return None
    named = f"the launching process (pid {launcher})"
    if os.getppid() != int(launcher):
        return named
    try:
        state = Path(f"/proc/{launcher}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return named
    return named if state in ("Z", "X", "x") else None


def _spawned(
    local_rank: int, world_size: int, port: int, fn: Callable, args: Sequence[Any], own_group: bool = False
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(local_rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(local_rank),
    )
    os.environ[LAUNCHER_PID] = str(os.getppid())
    if own_group:  # a terminal's Ctrl-C reaches the launcher alone, which passes each signal on once
        os.setpgrp()
    try:
        fn(*args)
    except Exception as error:
        if (said := user_error(error)) is None:
            raise
        if local_rank == 0:  # what the user can fix, said once by the parent (``spawn``), no traceback per rank
            Path(os.environ[_REFUSAL]).write_text(json.dumps({"message": str(said), "exit_code": said.exit_code}))
        raise SystemExit(said.exit_code) from None
    for signum in PassedOn.SIGNALS if own_group else ():  # recorded: a signal passed on now would only kill it
        signal.signal(signum, signal.SIG_IGN)
    if dist.is_initialized():
        # leave together: a rank that tears gloo down while another still talks to it can
        # abort ("terminate called without an active exception")
        dist.barrier()
        dist.destroy_process_group()


def spawn(fn: Callable, args: Sequence[Any], replicas: int, port: int = 0, pass_signals: bool = False) -> str | None:
    """Run ``fn(*args)`` in ``replicas`` fresh processes that form one process group. A rank's
    ``PilotError`` (a setting the user can fix, found while a rank builds) is raised here, once,
    as ``RankRefused`` with its message and exit code (not a traceback from every rank).

    ``pass_signals`` (training, whose ranks record a signal and stop at an update boundary): the ranks run
    in their own process group and every SIGINT, SIGTERM or SIGHUP this process gets is passed on to
    them (``PassedOn``); the first one's name is returned (None: none came). Otherwise (the pilot's phases)
    this process handles signals itself and the ranks share its process group."""
    refuse_busy_port(port)
    with tempfile.TemporaryDirectory(prefix="pilot-ranks-") as scratch:
        refusal = Path(scratch) / "refusal.json"
        previous = os.environ.get(_REFUSAL)
        os.environ[_REFUSAL] = str(refusal)  # the ranks inherit it
        quiet = logging.getLogger("torch.multiprocessing.spawn")  # "Terminating process ..." of the ranks left
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            ranks = mp.start_processes(
                _spawned,
                args=(replicas, port or free_port(), fn, tuple(args), pass_signals),
                nprocs=replicas,
                join=False,
            )
            with PassedOn([process.pid for process in ranks.processes] if pass_signals else []) as passed:
                while not ranks.join():
                    pass
            return passed.first
        except mp.ProcessExitedException as ended:
            if passed.count and ended.signal_name in ("SIGINT", "SIGTERM", "SIGHUP"):
                return passed.first  # a second signal passed on stopped it at once: its run records how it ended
            if passed.count and ended.exit_code in SIGNAL_EXITS:  # a rank ended on the signal it recorded (after
                return passed.first  # its last update: signal_after_budget): the run's record says how
            if ended.signal_name and not passed.count and not refusal.exists():  # killed from outside (the OOM
                raise RankKilled(ended.error_index, ended.signal_name) from ended  # killer): which, and how
            if not refusal.exists():
                raise
            said = json.loads(refusal.read_text())
            raise RankRefused(said["message"], said["exit_code"]) from None
        finally:
            quiet.setLevel(level)
            if previous is None:
                os.environ.pop(_REFUSAL, None)
            else:
                os.environ[_REFUSAL] = previous


SIGNAL_EXITS = {128 + int(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


class PassedOn:
    """While the ranks run: SIGINT, SIGTERM and SIGHUP sent to this launcher are passed on to every rank,
    once each (the ranks are in their own process group), and this process keeps waiting for them: each
    stops at its update boundary and records the signal (a second: at once). A SIGTERM sent to the
    launcher alone was acknowledged here and reached no rank, which trained to the end."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.previous, self.count = pids, {}, 0  # count: signals passed on
        self.first: str | None = None  # the first one's name

    def __enter__(self) -> PassedOn:
        if self.pids and threading.current_thread() is threading.main_thread():
            self.previous = {signum: signal.signal(signum, self._pass_on) for signum in self.SIGNALS}
        return self

    def _pass_on(self, signum: int, frame: Any) -> None:
        self.count += 1
        self.first = self.first or signal.Signals(signum).name
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)


class RankKilled(RuntimeError):
    """A spawned rank ended by a signal no one passed on to it (``kill -9``, the kernel's out-of-memory killer):
    the others then fail on the broken process group, and their error alone named no rank and no signal."""

    def __init__(self, rank: int, signal_name: str) -> None:
        oom = " (the kernel's out-of-memory killer sends SIGKILL: see dmesg)" if signal_name == "SIGKILL" else ""
        super().__init__(f"replica rank {rank} was killed by {signal_name}{oom}; the other replicas then failed")
        self.rank, self.signal_name = rank, signal_name


class RankRefused(PilotError):
    """What a spawned rank refused (its ``PilotError``), with that error's exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def all_reduce_sum(value: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    if ctx.is_distributed:
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value


def rank0_decides(flag: bool, ctx: DistContext) -> bool:
    """Rank 0's ``flag`` on every rank (a decision the ranks must share before a collective)."""
    return bool(rank0_value(flag, ctx))


def rank0_value(value: Any, ctx: DistContext) -> Any:
    """Rank 0's ``value`` (plain Python) on every rank (a collective)."""
    if not ctx.is_distributed:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier(ctx: DistContext) -> None:
    """Every rank waits for the others (nothing without a process group)."""
    if ctx.is_distributed:
        dist.barrier()


def every_rank(value: Any, ctx: DistContext) -> list[Any] | None:
    """Every rank's ``value`` (plain Python, picklable), in rank order, on every rank (a collective);
    None without a process group."""
    if not ctx.is_distributed:
        return None
    values: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(values, value)
    return values
