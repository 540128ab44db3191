"""Fake-tensor estimates of one config at the micro-batches, checkpointing settings and FSDP rank
counts the choice sheet tries, each computed once per run of the sheet."""

from __future__ import annotations

from omegaconf import DictConfig

from pilot.data.task import TaskData
from pilot.engine.sharding import is_sharded
from pilot.estimate.fake_tensor import MemoryEstimate, estimate_memory
from pilot.estimate.stored import stored_estimate


def config_ranks(cfg: DictConfig) -> int:
    """The ranks an estimate of ``cfg`` as configured is for: FSDP's count, else 1 (one whole replica)."""
    return int(cfg.distributed.replicas) if is_sharded(cfg) else 1


class MissingEstimate(Exception):
    """A probing cache (``EstimateCache.probing``) does not hold this estimate."""

    def __init__(self, key: tuple[int, bool, int]):
        super().__init__(key)
        self.key = key


class EstimateCache:
    """Estimates of one config keyed by (micro-batch, checkpointing, ranks): ranks 1 is one unsharded
    replica (single GPU or DDP), ranks N > 1 rank 0 of N FSDP ranks. ``stored``: read and keep them in
    the estimate store on disk (``pilot.estimate.stored``; ``mode=estimate``). While ``probing``, an
    estimate it does not hold is not computed: its key goes to ``missing`` and ``MissingEstimate``
    is raised (``pilot.rental.parallel_estimates``)."""

    def __init__(self, cfg: DictConfig, task: TaskData, first: MemoryEstimate | None = None, stored: bool = False):
        self.cfg, self.task, self.stored = cfg, task, stored
        self.base_key = (int(cfg.batch.micro_batch), bool(cfg.memory.activation_checkpointing), config_ranks(cfg))
        self.estimates: dict[tuple[int, bool, int], MemoryEstimate] = {}
        self.probing, self.missing = False, set()
        if first is not None:
            self.estimates[self.base_key] = first

    def get(self, micro_batch: int, checkpointing: bool, ranks: int | None = None) -> MemoryEstimate:
        key = (int(micro_batch), bool(checkpointing), self.base_key[2] if ranks is None else int(ranks))
        if key not in self.estimates and self.probing:
            self.missing.add(key)
            raise MissingEstimate(key)
        if key not in self.estimates and self.stored:
            self.estimates[key] = stored_estimate(self.cfg, self.task, *key)
        if key not in self.estimates:
            self.estimates[key] = estimate_memory(
                self.cfg, self.task, micro_batch=key[0], activation_checkpointing=key[1], ranks=key[2]
            )
        return self.estimates[key]

    @property
    def base(self) -> MemoryEstimate:
        return self.get(*self.base_key)
