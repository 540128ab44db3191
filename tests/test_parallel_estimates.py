"""The choice sheet's estimates in worker processes (pilot/rental/parallel_estimates.py): the same
estimates the sheet computes one by one, no more, and the same rows."""

from __future__ import annotations

from hydra.utils import instantiate

import pilot.rental.estimate_cache as estimate_cache
from pilot.estimate.fake_tensor import estimate_memory
from pilot.rental.catalog import load_catalog
from pilot.rental.choice_sheet import choice_rows
from pilot.rental.estimate_cache import EstimateCache
from pilot.rental.parallel_estimates import Workers, fill, needed


def _setup(make_cfg):
    cfg = make_cfg("distributed=fsdp", "distributed.replicas=2", "rental.counts=[1,2,4]")
    return cfg, instantiate(cfg.data, _convert_="all"), load_catalog(cfg.rental)[:3]


def test_workers_compute_what_the_sheet_needs_and_the_rows_do_not_change(make_cfg, monkeypatch):
    cfg, task, catalog = _setup(make_cfg)
    one_by_one = EstimateCache(cfg, task)
    rows = choice_rows(cfg, one_by_one, catalog)
    parallel = EstimateCache(cfg, task, one_by_one.base)
    first_round = needed(cfg, parallel, catalog)
    assert len(first_round) >= 2 and one_by_one.base_key not in first_round
    filled = fill(cfg, parallel, catalog, workers=2)
    assert filled.in_workers >= len(first_round) // 2 >= 1 and filled.rounds >= 1  # this process computed the rest
    assert set(parallel.estimates) == set(one_by_one.estimates)  # no estimate the sheet would not compute
    for key, estimate in one_by_one.estimates.items():
        assert [p.peak_bytes for p in parallel.estimates[key].phases] == [p.peak_bytes for p in estimate.phases]

    def nothing_left(*args, **kwargs):
        raise AssertionError("the sheet computed an estimate the workers should have given")

    monkeypatch.setattr(estimate_cache, "estimate_memory", nothing_left)
    assert [r.as_dict() for r in choice_rows(cfg, parallel, catalog)] == [r.as_dict() for r in rows]
    assert needed(cfg, parallel, catalog) == []


def test_estimates_cheaper_than_a_workers_start_stay_here(make_cfg):
    cfg, task, catalog = _setup(make_cfg)
    cache = EstimateCache(cfg, task)
    filled = fill(cfg, cache, catalog)  # the tiny model's base estimate takes about a second
    assert filled.started == 0 and filled.in_workers == 0 and needed(cfg, cache, catalog) == []


def test_what_workers_store_is_read_back_here(make_cfg, tmp_path, monkeypatch):
    """The workers' store keys equal this process's (same config, data and code): run again, every
    estimate is read here and no worker starts."""
    from pilot.estimate.stored import CACHE_ENV, MIN_SECONDS_ENV, from_store

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "store"))
    monkeypatch.setenv(MIN_SECONDS_ENV, "0")  # workers keep even the tiny model's quick estimates
    cfg, task, catalog = _setup(make_cfg)
    base = EstimateCache(cfg, task).base
    assert fill(cfg, EstimateCache(cfg, task, base, stored=True), catalog, workers=2).in_workers >= 1
    again = EstimateCache(cfg, task, base, stored=True)
    filled = fill(cfg, again, catalog, workers=2)
    assert filled.in_workers == 0
    assert all(from_store(e) for key, e in again.estimates.items() if key != again.base_key)


def test_a_failed_worker_leaves_its_estimates_to_the_sheet(make_cfg, monkeypatch, caplog):
    import pilot.rental.parallel_estimates as parallel

    cfg, task, catalog = _setup(make_cfg)
    one_by_one = EstimateCache(cfg, task)
    rows = choice_rows(cfg, one_by_one, catalog)
    cache = EstimateCache(cfg, task, one_by_one.base)
    monkeypatch.setattr(parallel, "_name", lambda key: f"not-a-key-{key[0]}")  # the worker cannot parse it
    filled = fill(cfg, cache, catalog, workers=2)
    assert filled.in_workers == 0 and "a worker estimating" in caplog.text
    assert [r.as_dict() for r in choice_rows(cfg, cache, catalog)] == [r.as_dict() for r in rows]


def test_workers_are_kept_for_the_next_round_and_give_what_is_computed_here(make_cfg, tmp_path):
    """A later round's estimates go to the workers the first round started (their imports and first
    fake mode paid once), and equal the same estimates computed in this process."""
    cfg = make_cfg()
    first_round, second_round = [(1, False, 1), (2, False, 1)], [(1, True, 1), (2, True, 1)]
    with Workers(cfg, tmp_path) as pool:
        first = pool.compute(first_round, 2)
        started = list(pool.processes)
        second = pool.compute(second_round, 2)
        assert pool.processes == started and len(started) == 2
    assert [process.returncode for process in started] == [0, 0]  # stdin closed: they finished
    assert set(first) == set(first_round) and set(second) == set(second_round)
    for (micro, checkpointing, _), estimate in {**first, **second}.items():
        here = estimate_memory(cfg, micro_batch=micro, activation_checkpointing=checkpointing)
        assert [p.peak_bytes for p in estimate.phases] == [p.peak_bytes for p in here.phases]


def test_this_process_computes_its_share_while_the_workers_compute_theirs(make_cfg, monkeypatch):
    """It used to wait idle while the workers computed the whole round: on 2 CPUs one worker and this
    process now share a round."""
    cfg, task, catalog = _setup(make_cfg)
    cache = EstimateCache(cfg, task, EstimateCache(cfg, task).base)
    computed_here = []
    get = EstimateCache.get

    def counted(self, *key):
        if key not in self.estimates and not self.probing:
            computed_here.append(key)
        return get(self, *key)

    monkeypatch.setattr(EstimateCache, "get", counted)
    first_round = needed(cfg, cache, catalog)
    filled = fill(cfg, cache, catalog, workers=2)
    assert first_round[0] in computed_here and first_round[1] not in computed_here
    assert filled.started == 1 and filled.in_workers >= 1


def test_a_round_is_shared_when_that_ends_it_sooner_a_workers_start_counted():
    """The README's 7B on 2 CPUs (estimates of 3.2 s, a worker's start 3.5 s): its second round of
    three is shared (2 here, 1 in a new worker: 6.7 s, not 9.6 s), its third of two too (the worker
    runs already). It used to stay here whenever the base estimate took under 3.5 s: 25.3 s for the
    command instead of 17.4-17.8 s. A small model's estimates (0.1 s) stay here."""
    from pilot.rental.parallel_estimates import WORKER_START_S, shares

    assert WORKER_START_S == 3.5
    assert shares(3, 3.2, started=0, cpus=2) == 2
    assert shares(2, 3.2, started=1, cpus=2) == 2
    assert shares(2, 3.2, started=0, cpus=2) == 1  # 3.5 + 3.2 s there is later than 6.4 s here
    assert shares(3, 0.1, started=0, cpus=8) == 1
    assert shares(1, 30.0, started=1, cpus=8) == 1
    assert shares(6, 10.0, started=0, cpus=8) == 6  # 10 s here; a new worker 13.5 s: better than 20 s
    assert shares(6, 10.0, started=0, cpus=1) == 1
