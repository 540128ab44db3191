"""The configured model built on the meta device (no memory, no values), for checks that need only its
structure before anything runs: its classes, whether it declares activation checkpointing."""

from __future__ import annotations

import torch
from hydra.utils import instantiate

from pilot.models.pretrained_shapes import ShapesOnlyPretrained


def model_on_meta(cfg) -> torch.nn.Module | None:
    """``cfg.model`` instantiated on the meta device (a ``from_pretrained`` inside it builds from the saved
    config, reading no weight), the global RNG left as it was; None when it cannot be built there (the
    run's own build then decides, and refuses what it must)."""
    try:
        with torch.device("meta"), torch.random.fork_rng(devices=[]), ShapesOnlyPretrained(cfg.model.get("_target_")):
            return instantiate(cfg.model, _convert_="all")
    except Exception:  # noqa: BLE001
        return None
