"""Fake-tensor estimates of one config at the micro-batches and checkpointing settings the
choice sheet tries, each computed once per run of the sheet."""

from __future__ import annotations

from omegaconf import DictConfig

from pilot.data.task import TaskData
from pilot.estimate.fake_tensor import MemoryEstimate, estimate_memory


class EstimateCache:
    """Fake-tensor estimates of one config at other micro-batches / checkpointing, computed once each."""

    def __init__(self, cfg: DictConfig, task: TaskData, first: MemoryEstimate | None = None):
        self.cfg, self.task = cfg, task
        self.base_key = (int(cfg.batch.micro_batch), bool(cfg.memory.activation_checkpointing))
        self.estimates: dict[tuple[int, bool], MemoryEstimate] = {}
        if first is not None:
            self.estimates[self.base_key] = first

    def get(self, micro_batch: int, checkpointing: bool) -> MemoryEstimate:
        key = (int(micro_batch), bool(checkpointing))
        if key not in self.estimates:
            self.estimates[key] = estimate_memory(
                self.cfg, self.task, micro_batch=key[0], activation_checkpointing=key[1]
            )
        return self.estimates[key]

    @property
    def base(self) -> MemoryEstimate:
        return self.get(*self.base_key)
