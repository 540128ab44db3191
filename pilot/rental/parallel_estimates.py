"""The choice sheet's estimates side by side in worker processes, round by round (``mode=estimate``).

Each fake-tensor estimate is single-threaded Python (the README's 7B: 10-17 s apiece, six of them),
so a machine with more cores can compute several at once. Which ones the sheet needs depends on
those before: a row tries its settings in order and stops at the first that fits. ``fill`` finds the
estimates the rows need next and cannot do without — a probing pass of the sheet, in which the cache
computes nothing and stops each row at the first estimate it lacks — computes them in worker
processes (new interpreters, ``spawn``; one thread each), and repeats until no row lacks one. The
sheet is then built as always from the filled cache: no estimate is computed that the sheet built
one by one would not compute, and one a worker could not give (a refusal, a crash) is computed
there and fails there as it always did. What the estimate store holds is read here, never sent
to a worker. Workers: the CPUs this process may use (``engine.threads.cpu_budget``), at most one
per estimate of a round, and only when the base estimate took at least ``WORTH_A_WORKER_S`` to
compute (a worker's start costs about that; a small model's estimates are computed here); a round
of one estimate runs here.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.engine.threads import cpu_budget
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
    done, pool = Filled(workers=workers), None
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    try:
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
            if pool is None:
                pool = ProcessPoolExecutor(min(workers, len(keys)), mp_context=get_context("spawn"))
            futures = [(key, pool.submit(_estimate, container, key)) for key in keys]
            for key, future in futures:
                try:
                    cache.estimates[key] = future.result()
                    done.in_workers += 1
                except Exception as error:  # noqa: BLE001 - the sheet computes it here and reports it
                    log.warning("estimate %s in a worker failed (%s): computed here instead", key, error)
                    return done
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return done


_tasks: dict[str, Any] = {}  # a worker builds the task once


def _estimate(container: dict[str, Any], key: tuple[int, bool, int]) -> MemoryEstimate:
    """In a worker: one estimate of the config at ``key``, through the estimate store."""
    torch.set_num_threads(1)
    cfg = OmegaConf.create(container)
    data = json.dumps(container["data"], sort_keys=True, default=str)
    if data not in _tasks:
        _tasks[data] = instantiate(cfg.data, _convert_="all")
    return stored_estimate(cfg, _tasks[data], *key)
