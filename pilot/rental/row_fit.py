"""Which setting of a choice sheet's row fits: the micro-batches that divide a replica's share, tried without
activation checkpointing first; a row of several GPUs whose DDP copies do not fit, sharded (FSDP)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pilot.rental.estimate_cache import EstimateCache

if TYPE_CHECKING:
    from pilot.rental.choice_sheet import _Setup


def _micro_candidates(configured: int, per_replica: int) -> list[int]:
    """The configured micro-batch, then halves, keeping only those that divide the replica's share."""
    out, micro = [], max(1, min(configured, per_replica))
    while micro >= 1:
        if per_replica % micro == 0 and micro not in out:
            out.append(micro)
        if micro == 1:
            break
        micro //= 2
    if 1 not in out:
        out.append(1)
    return out


def fit_or_shard(row: dict, setup: _Setup, cache: EstimateCache, per_replica: int, buckets: int, capacity: float,
                  ranks: int):  # fmt: skip
    """``first_fit``'s (chosen, smallest) and the ranks they are for: a row of several GPUs where DDP's whole
    copies do not fit tries FSDP over them (more GPUs never fit less than one)."""
    chosen, smallest = first_fit(setup, cache, per_replica, buckets, capacity, ranks)
    count = row["count"]
    if chosen is None and ranks == 1 < count and row["precision"] != "fp16":
        row.update(strategy=f"FSDP, {count} ranks", ranks=count)
        chosen, smallest = first_fit(setup, cache, per_replica, 0, capacity, count)
        ranks = count
    return chosen, smallest, ranks


def first_fit(setup: _Setup, cache: EstimateCache, per_replica: int, buckets: int, capacity: float, ranks: int = 1):
    """(micro-batch, checkpointing, estimate, need) of the first setting that fits, trying the micro-batches
    without activation checkpointing first, else None; and the smallest need seen with its estimate.

    Checkpointing only lowers what forward/backward keeps; a micro-batch whose peak without it is
    the optimizer step (activations already freed) is not estimated again with it: the need
    cannot change."""
    chosen, smallest = None, None
    for checkpointing in setup.settings:
        for micro in _micro_candidates(setup.micro_batch, per_replica):
            if checkpointing and _peak_is_optimizer_step(cache, micro, ranks):
                continue
            estimate = cache.get(micro, checkpointing, ranks)
            need = (estimate.peak_bytes + buckets) * (1 + setup.margin) + setup.reserve
            if smallest is None or need < smallest[0]:
                smallest = (need, estimate)
            if need <= capacity:
                chosen = (micro, checkpointing, estimate, need)
                break
        if chosen:
            break
    return chosen, smallest


def _peak_is_optimizer_step(cache: EstimateCache, micro: int, ranks: int) -> bool:
    without = cache.estimates.get((int(micro), False, ranks))
    return without is not None and without.peak_phase.during == "optimizer step"
