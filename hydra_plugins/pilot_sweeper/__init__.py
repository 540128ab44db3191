"""Hydra's basic sweeper, composing each job's config once instead of twice.

Hydra's ``BasicSweeper`` composes every job's config to check the batch before launching it (a
typo in job 7 fails before job 1 runs), and then its launcher composes each job's config again:
here ~0.2-0.4 s per compose, paid twice per job. ``ComposeOnceSweeper`` keeps the configs its
check composed and hands each to the launcher when it asks for the same job (same master config,
same overrides), so the launcher gets exactly the object its own call would have built. At most
``KEEP`` configs are kept (~0.4 MB each); the launcher composes the rest itself, as before.

Selected in conf/config.yaml (``override hydra/sweeper: compose_once``); its settings are the
basic sweeper's (``max_batch_size``, ``params``). Kept free of pilot and torch: Hydra imports every
plugin module whenever any Hydra app starts in this environment. No ``from __future__ import
annotations``: Hydra runs this module before it is in ``sys.modules``, where a dataclass with
string annotations looks itself up.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

KEEP = 128  # composed configs kept between the batch's check and its launch


@dataclass
class ComposeOnceSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.pilot_sweeper.ComposeOnceSweeper"


ConfigStore.instance().store(group="hydra/sweeper", name="compose_once", node=ComposeOnceSweeperConf, provider="pilot")


class ComposedOnce:
    """A config loader that answers ``load_sweep_config`` from configs composed ahead (``compose``),
    each handed out once; everything else goes to the loader it wraps."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._ready: dict[tuple[int, tuple[str, ...]], DictConfig] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def compose(self, master_config: DictConfig, sweep_overrides: list[str]) -> None:
        """Compose one job's config now (raising what composing it raises) and keep it, up to ``KEEP``."""
        composed = self._loader.load_sweep_config(master_config, sweep_overrides)
        if len(self._ready) < KEEP:
            self._ready[(id(master_config), tuple(sweep_overrides))] = composed

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        ready = self._ready.pop((id(master_config), tuple(sweep_overrides)), None)
        return ready if ready is not None else self._loader.load_sweep_config(master_config, sweep_overrides)


class ComposeOnceSweeper(BasicSweeper):
    """``BasicSweeper`` whose launcher reuses the configs composed to check each batch."""

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        loader = ComposedOnce(hydra_context.config_loader)
        super().setup(
            hydra_context=HydraContext(config_loader=loader, callbacks=hydra_context.callbacks),
            task_function=task_function,
            config=config,
        )

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.hydra_context is not None and self.config is not None
        for overrides in batch:
            self.hydra_context.config_loader.compose(self.config, list(overrides))
