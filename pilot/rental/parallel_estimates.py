"""The choice sheet's estimates side by side in worker processes, round by round (``mode=estimate``).

Each fake-tensor estimate is single-threaded Python (the README's 7B: 10-17 s apiece, six of them),
so a machine with more cores can compute several at once. Which ones the sheet needs depends on
those before: a row tries its settings in order and stops at the first that fits. ``fill`` finds the
estimates the rows need next and cannot do without — a probing pass of the sheet, in which the cache
computes nothing and stops each row at the first estimate it lacks — computes them in worker
processes (``python -m`` in new interpreters, one thread each), and repeats until no row lacks one. The
sheet is then built as always from the filled cache: no estimate is computed that the sheet built
one by one would not compute, and one a worker could not give (a refusal, a crash) is computed
there and fails there as it always did. What the estimate store holds is read here, never sent
to a worker. Workers: the CPUs this process may use (``cpu_budget``), at most one
per estimate of a round, and only when the base estimate took at least ``WORTH_A_WORKER_S`` to
compute (a worker's start costs about that; a small model's estimates are computed here); a round
of one estimate runs here.
"""

from __future__ import annotations

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
from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.estimate.stored import read_stored, stored_estimate
from pilot.rental.catalog import Gpu
from pilot.rental.choice_sheet import choice_rows
from pilot.rental.estimate_cache import EstimateCache, MissingEstimate

log = logging.getLogger("pilot")


@dataclass
class Filled:
    rounds: int = 0
    in_workers: int = 0  # estimates computed in worker processes
    workers: int = 0


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


WORTH_A_WORKER_S = 5.0  # a worker's start (new interpreter, torch, the first fake mode): ~5 s measured here


def fill(cfg: DictConfig, cache: EstimateCache, catalog: list[Gpu], workers: int | None = None) -> Filled:
    """Fill ``cache`` with every estimate the sheet will ask for, in parallel where a round has several
    and an estimate costs more than starting a worker (the base estimate's time tells: a small model's
    estimates, a second each, are computed here)."""
    if workers is None:
        workers = cpu_budget()[0] if cache.base.cost_seconds >= WORTH_A_WORKER_S else 1
    done = Filled(workers=workers)
    with tempfile.TemporaryDirectory(prefix="pilot-estimates-") as scratch:
        config = Path(scratch) / "config.yaml"
        OmegaConf.save(OmegaConf.create(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)), config)
        while keys := needed(cfg, cache, catalog):
            done.rounds += 1
            if cache.stored:  # what the store holds is read here, not sent to a worker
                found = {key: read_stored(cfg, cache.task, *key) for key in keys}
                cache.estimates.update({key: estimate for key, estimate in found.items() if estimate is not None})
                keys = [key for key in keys if found[key] is None]
            if workers < 2 or len(keys) <= 1:
                for key in keys:
                    cache.get(*key)
                continue
            results = _in_workers(config, keys, min(workers, len(keys)), Path(scratch) / f"round-{done.rounds}")
            cache.estimates.update(results)
            done.in_workers += len(results)
            if len(results) < len(keys):  # the sheet computes the rest here, and reports what fails
                return done
    return done


def _in_workers(config: Path, keys: list[tuple[int, bool, int]], workers: int, out: Path) -> dict:
    """``keys`` shared among ``workers`` new processes (``python -m pilot.rental.parallel_estimates``:
    no module of this process is imported again in them); the estimates they gave."""
    out.mkdir()
    shares = [keys[i::workers] for i in range(workers)]
    processes = []
    for number, share in enumerate(shares):
        command = [sys.executable, "-m", "pilot.rental.parallel_estimates", str(os.getpid()), str(config), str(out)]
        with open(out / f"worker-{number}.log", "w") as log_file:  # a file, not a pipe: nothing blocks on it
            processes.append(subprocess.Popen([*command, *map(_name, share)], stdout=log_file, stderr=log_file))
    for number, process in enumerate(processes):
        if process.wait():
            last = (out / f"worker-{number}.log").read_text(errors="replace").strip().splitlines()[-1:]
            log.warning("a worker estimating %s failed (exit %d): %s", shares[number], process.returncode, last)
    results = {}
    for key in keys:
        path = out / f"{_name(key)}.json"
        if path.is_file():
            results[key] = MemoryEstimate.from_dict(json.loads(path.read_text()))
    return results


def _name(key: tuple[int, bool, int]) -> str:
    return f"{key[0]}-{int(key[1])}-{key[2]}"


def _work(parent: int, config: Path, out: Path, names: list[str]) -> None:
    """A worker: each named estimate of the config, through the estimate store, one file each. It
    dies with ``parent`` (a killed ``mode=estimate`` leaves no worker computing)."""
    die_with_parent(parent)
    torch.set_num_threads(1)
    cfg = OmegaConf.load(config)
    task = instantiate(cfg.data, _convert_="all")
    for name in names:
        micro, checkpointing, ranks = (int(part) for part in name.split("-"))
        estimate = stored_estimate(cfg, task, micro, bool(checkpointing), ranks)
        (out / f"{name}.json").write_text(json.dumps(asdict(estimate), default=str))


if __name__ == "__main__":
    _work(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
