"""The choice sheet's estimates side by side in worker processes, round by round (``mode=estimate``).

Each fake-tensor estimate is single-threaded Python (the README's 7B: 10-17 s apiece, six of them),
so a machine with more cores can compute several at once. Which ones the sheet needs depends on
those before: a row tries its settings in order and stops at the first that fits. ``fill`` finds the
estimates the rows need next and cannot do without — a probing pass of the sheet, in which the cache
computes nothing and stops each row at the first estimate it lacks — computes them in worker
processes (``python -m`` in new interpreters, one thread each, kept for the next round), and repeats
until no row lacks one. The sheet is then built as always from the filled cache: no estimate is computed that the sheet built
one by one would not compute, and one a worker could not give (a refusal, a crash) is computed
there and fails there as it always did. What the estimate store holds is read here, never sent
to a worker. Workers: at most the CPUs this process may use (``cpu_budget``) less this one, each
round as many as make it soonest done (``shares``): an estimate is taken to cost what the base
estimate took, a worker not started yet ``WORKER_START_S`` more (a small model's estimates, a
second each, stay here; the README's 7B, 3-4 s each, goes to a worker from its second round on,
and the worker computes the third round too).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.child_process import die_with_parent
from pilot.cpu_budget import cpu_budget
from pilot.estimate.dependencies import building, record_imports
from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.estimate.stored import read_stored, stored_estimate, uses_your_code
from pilot.rental.catalog import Gpu
from pilot.rental.choice_sheet import choice_rows
from pilot.rental.estimate_cache import EstimateCache, MissingEstimate

log = logging.getLogger("pilot")


@dataclass
class Filled:
    rounds: int = 0
    in_workers: int = 0  # estimates computed in worker processes
    cpus: int = 0  # processes a round may use (this one and workers)
    started: int = 0  # worker processes started (each kept for the later rounds)


def needed(cfg: DictConfig, cache: EstimateCache, catalog: list[Gpu]) -> list[tuple[int, bool, int]]:
    """The estimates the sheet's rows need next, given those ``cache`` holds (its base included)."""
    cache.probing, cache.missing = True, set()
    try:
        choice_rows(cfg, cache, catalog)
    except MissingEstimate as missing:  # the base, which every row reads
        return [missing.key]
    finally:
        cache.probing = False
    return sorted(cache.missing)


WORKER_START_S = 3.5  # a worker's start (new interpreter, torch, the first fake mode): 3-4 s measured here


def shares(estimates: int, each_s: float, started: int, cpus: int) -> int:
    """How many processes (this one and workers) should share a round of ``estimates`` that cost
    ``each_s`` apiece, ``started`` workers running already: the count whose round ends soonest, this
    process computing every ``count``-th estimate and each worker not started yet paying its start
    first. 1: all here. Measured on the README's 7B (3.2 s the base, 3.6-4.1 s each other, on 2
    CPUs): 17.4-17.8 s with a worker from round 2 (3 estimates: 2 here, 1 there), 25.3 s without."""

    def round_s(count: int) -> float:
        here = -(-estimates // count)
        elsewhere = [len(range(number, estimates - here, count - 1)) for number in range(count - 1)]
        there = [(WORKER_START_S if number >= started else 0) + k * each_s for number, k in enumerate(elsewhere)]
        return max([here * each_s, *there])

    return min(range(1, min(cpus, estimates) + 1), key=lambda count: (round_s(count), count))


def fill(cfg: DictConfig, cache: EstimateCache, catalog: list[Gpu], workers: int | None = None) -> Filled:
    """Fill ``cache`` with every estimate the sheet will ask for, in parallel where a round has several
    and sharing it ends it sooner (``shares``: a small model's estimates, a second each, are computed
    here). Workers started in one round compute the next rounds too: their imports and first fake
    mode (~3.5 s here) are paid once. ``workers``: that many processes share every round (tests)."""
    cpus = workers if workers is not None else cpu_budget()[0]
    done = Filled(cpus=cpus)
    with tempfile.TemporaryDirectory(prefix="pilot-estimates-") as scratch, Workers(cfg, Path(scratch)) as pool:
        while keys := needed(cfg, cache, catalog):
            done.rounds += 1
            if cache.stored:  # what the store holds is read here, not sent to a worker
                found = {key: read_stored(cfg, cache.task, *key) for key in keys}
                cache.estimates.update({key: estimate for key, estimate in found.items() if estimate is not None})
                keys = [key for key in keys if found[key] is None]
            if not keys:
                continue
            share = (
                min(workers, len(keys))
                if workers is not None
                else shares(len(keys), cache.base.cost_seconds, len(pool.processes), cpus)
            )
            if share < 2:
                for key in keys:
                    cache.get(*key)
                continue
            # this process computes one share, a worker each of the others
            here, elsewhere = keys[::share], [key for number, key in enumerate(keys) if number % share]
            pool.submit(elsewhere, share - 1)
            for key in here:  # while the workers compute theirs
                cache.get(*key)
            results = pool.collect()
            cache.estimates.update(results)
            done.in_workers += len(results)
            done.started = len(pool.processes)
            if len(results) < len(elsewhere):  # the sheet computes the rest here, and reports what fails
                return done
    return done


class Workers:
    """Worker processes (``python -m pilot.rental.parallel_estimates``: no module of this process is
    imported again in them), started when a round first needs them and kept for the next rounds. Each
    reads estimate names on its stdin, writes ``<name>.json`` and answers the name on its stdout; its
    log is a file (nothing blocks on it). Closing the pool closes their stdin: they exit."""

    def __init__(self, cfg: DictConfig, scratch: Path) -> None:
        self.scratch = scratch
        self.config = scratch / "config.yaml"  # what every worker estimates, resolved
        OmegaConf.save(OmegaConf.create(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)), self.config)
        self.processes: list[subprocess.Popen] = []
        self.shares: dict[int, list[tuple[int, bool, int]]] = {}  # sent by ``submit``, not collected yet

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        for process in self.processes:
            if exc_type is not None:  # an interruption or an error here: nothing more is wanted of them
                process.kill()
            with contextlib.suppress(OSError):
                process.stdin.close()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _log(self, number: int) -> Path:
        return self.scratch / f"worker-{number}.log"

    def _start(self, count: int) -> None:
        while len(self.processes) < count:
            command = [sys.executable, "-m", "pilot.rental.parallel_estimates", str(os.getpid()), str(self.config)]
            with open(self._log(len(self.processes)), "w") as log_file:
                self.processes.append(
                    subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True)
                )

    def compute(self, keys: list[tuple[int, bool, int]], count: int) -> dict:
        """``keys`` shared among ``count`` workers; the estimates they gave (a worker that fails is said
        and gives none of its share)."""
        self.submit(keys, count)
        return self.collect()

    def submit(self, keys: list[tuple[int, bool, int]], count: int) -> None:
        """``keys`` shared among ``count`` workers, which start computing them now (``collect``)."""
        self._start(count)
        self.shares = {number: keys[number::count] for number in range(count)}
        for number, share in self.shares.items():
            process = self.processes[number]
            try:
                process.stdin.write("".join(f"{_name(key)}\n" for key in share))
                process.stdin.flush()
            except OSError:  # died in an earlier round: its answers below are missing
                pass

    def collect(self) -> dict:
        """The estimates the workers gave for what ``submit`` sent (a worker that fails is said and gives
        none of its share)."""
        shares, self.shares = self.shares, {}
        for number, share in shares.items():
            process = self.processes[number]
            answered = [process.stdout.readline().strip() for _ in share]
            if answered != [_name(key) for key in share]:
                returncode = process.wait()
                last = self._log(number).read_text(errors="replace").strip().splitlines()[-1:]
                log.warning("a worker estimating %s failed (exit %d): %s", share, returncode, last)
        results = {}
        for key in (key for share in shares.values() for key in share):
            path = self.scratch / f"{_name(key)}.json"
            if path.is_file():
                results[key] = MemoryEstimate.from_dict(json.loads(path.read_text()))
        return results


def _name(key: tuple[int, bool, int]) -> str:
    return f"{key[0]}-{int(key[1])}-{key[2]}"


def _work(parent: int, config: Path) -> None:
    """A worker: each estimate named on stdin, through the estimate store, one file each next to the
    config, its name answered on stdout once written. It dies with ``parent`` (a killed
    ``mode=estimate`` leaves no worker computing)."""
    die_with_parent(parent)
    answers = os.fdopen(os.dup(1), "w")  # the protocol; anything the estimate prints goes to the log
    os.dup2(2, 1)
    torch.set_num_threads(1)
    cfg = OmegaConf.load(config)
    if uses_your_code(cfg):
        record_imports()  # before the task's and model's modules are imported here (estimate/dependencies.py)
    with building():
        task = instantiate(cfg.data, _convert_="all")
    for line in sys.stdin:
        name = line.strip()
        micro, checkpointing, ranks = (int(part) for part in name.split("-"))
        estimate = stored_estimate(cfg, task, micro, bool(checkpointing), ranks)
        (config.parent / f"{name}.json").write_text(json.dumps(asdict(estimate), default=str))
        print(name, file=answers, flush=True)


if __name__ == "__main__":
    _work(int(sys.argv[1]), Path(sys.argv[2]))
