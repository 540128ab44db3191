"""The adapter's own settings, before anything runs: what peft's config class refuses (said with the
keys its message names and how to write them), and ``layers_to_transform`` naming blocks the model
does not have (peft then says no target module was found, which blames ``target_modules``)."""

from __future__ import annotations

import re
from typing import Any

from hydra.utils import instantiate
from omegaconf import OmegaConf

from pilot.config.values import select
from pilot.models.adapter import adapter_settings, wants_adapter
from pilot.validation.problems import Problem

LIST_EXAMPLE = "[q_proj,v_proj]"  # a Llama's attention projections, as a list


def adapter_settings_if_any(cfg: Any) -> dict[str, Any] | None:
    """The adapter's peft settings, or None: no adapter, or one whose interpolation does not resolve
    (the resolve check names it)."""
    if not wants_adapter(cfg):
        return None
    try:
        return adapter_settings(cfg)
    except Exception:  # noqa: BLE001
        return None


def check_adapter_config(cfg: Any, problems: list[Problem]) -> None:
    if (settings := adapter_settings_if_any(cfg)) is None:
        return
    try:
        instantiate(OmegaConf.create(settings), _convert_="all")
    except Exception as error:  # noqa: BLE001 - peft's own check of its config (ValueError, TypeError)
        if "unexpected keyword argument" not in str(error):  # a key it lacks: the unknown keys' check says it
            problems.append(_refused(settings, error))
        return
    _check_layer_indices(cfg, settings, problems)


def _refused(settings: dict[str, Any], error: Exception) -> Problem:
    reason = " ".join(str(error.__cause__ or error).split())
    named = [key for key in settings if not key.startswith("_") and re.search(rf"\b{re.escape(key)}\b", reason)]
    shown = ", ".join(f"adapter.{key}={settings[key]!r}" for key in named) or "adapter"
    fix = "values peft's LoraConfig accepts together (peft's documentation of LoraConfig)"
    if "target_modules" in named and isinstance(settings.get("target_modules"), str) and "str" in reason:
        fix = f"adapter.target_modules as a list of module names (adapter.target_modules={LIST_EXAMPLE})"
    return Problem("adapter", shown, f"{shown}: peft refuses it ({reason[:300]}). Fix: {fix}", said=True)


def _check_layer_indices(cfg: Any, settings: dict[str, Any], problems: list[Problem]) -> None:
    layers = settings.get("layers_to_transform")
    depth = select(cfg, "model.config.num_hidden_layers")
    indices = [layers] if isinstance(layers, int) else layers if isinstance(layers, list) else []
    if not isinstance(depth, int) or isinstance(depth, bool) or select(cfg, "model.path"):
        return
    outside = [i for i in indices if not isinstance(i, int) or not 0 <= i < depth]
    if outside:
        problems.append(
            Problem(
                "adapter.layers_to_transform",
                layers,
                f"block(s) {outside} are not among the model's {depth} (0 to {depth - 1}, "
                f"model.config.num_hidden_layers={depth}): nothing there to adapt. Fix: indices from 0 to {depth - 1}",
            )
        )
