"""Deterministic data order: which examples each update and each replica gets.

Epoch e visits the training split in the permutation drawn from
``numpy.random.default_rng([seed, e])``; updates take consecutive chunks of it.
The position of the stream is just the update number, so a resumed run can
rebuild exactly the examples it would have drawn next.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pilot.engine.batch_plan import BatchPlan, ceil_div


@lru_cache(maxsize=4)
def epoch_order(seed: int, epoch: int, n_examples: int) -> tuple:
    return tuple(int(i) for i in np.random.default_rng([seed, epoch]).permutation(n_examples))


def update_indices(plan: BatchPlan, seed: int, update: int) -> list[int]:
    """Positions in the training split used by update ``update`` (0-based), all replicas together."""
    epoch, offset = divmod(update, plan.updates_per_epoch)
    start = sum(plan.update_sizes_in_epoch()[:offset])
    size = plan.examples_in_update(update)
    return list(epoch_order(seed, epoch, plan.train_examples)[start : start + size])


def data_position(plan: BatchPlan, update: int) -> dict:
    """Where the stream stands before update ``update``: epoch and examples consumed in it."""
    epoch, offset = divmod(update, plan.updates_per_epoch)
    return {"epoch": epoch, "position_in_epoch": sum(plan.update_sizes_in_epoch()[:offset])}


def rank_micro_batches(
    indices: list[int], micro_batch: int, replicas: int, rank: int, same_count: bool = False
) -> list[list[int]]:
    """This replica's share of one update, cut into micro-batches.

    Replicas take contiguous, equal shares (the last may be shorter). A replica
    whose share is empty gets one empty micro-batch: it must still join the
    gradient all-reduce, with a zero-weight loss. ``same_count`` (FSDP, whose every
    forward gathers parameters from all ranks): a replica with fewer micro-batches than
    the first gets empty ones after its own, so that every rank runs as many forwards
    (an update of 13 examples over 2 ranks at micro-batch 2: 4 and 3 before, and the
    ranks waited on each other's collectives for ever).
    """
    share = ceil_div(len(indices), replicas)
    mine = indices[rank * share : (rank + 1) * share]
    shards = [mine[i : i + micro_batch] for i in range(0, len(mine), micro_batch)] or [[]]
    if same_count:
        most = max(1, ceil_div(min(share, len(indices)), micro_batch))  # the first rank's count, the largest
        shards += [[] for _ in range(most - len(shards))]
    return shards
