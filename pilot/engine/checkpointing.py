"""Activation checkpointing (``memory=checkpointing``): one mechanism for every model.

A model turns it on in one of two ways, tried in this order:
1. pilot's own attribute: the class sets ``supports_activation_checkpointing = True`` and reads
   ``self.activation_checkpointing`` in ``forward`` (``pilot.models.tiny_gpt``);
2. the model's own method (every ``transformers`` ``PreTrainedModel`` whose
   ``supports_gradient_checkpointing`` is true), non-reentrant: ``activation_checkpointing_enable``
   where it exists (transformers >= 5.x), else ``gradient_checkpointing_enable`` (4.x; deprecated in 5).
Anything else is refused, never silently ignored. A model that claims support but recomputes
nothing is caught later: the estimate step compares the activations with and without it
(``pilot.estimate.fake_tensor.checkpointing_effect``).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.errors import ConfigRefused
from pilot.models.adapter import base_of

HF_METHOD = "gradient_checkpointing_enable"  # transformers 4.x and 5.x
HF_METHOD_NEW = "activation_checkpointing_enable"  # transformers 5.x: the same, under its new name


def declares_checkpointing(target: Any) -> bool:
    """Does ``target`` (a model class, a factory or a model) say it can checkpoint activations?"""
    if getattr(target, "supports_activation_checkpointing", False):
        return True
    return callable(getattr(target, HF_METHOD, None)) and bool(
        getattr(target, "supports_gradient_checkpointing", False)
    )


def enable_checkpointing(model: torch.nn.Module) -> str:
    """Turn activation checkpointing on in ``model`` (in the base an adapter wraps); returns how
    (for the log), or refuses."""
    model = base_of(model)
    if getattr(model, "supports_activation_checkpointing", False):
        model.activation_checkpointing = True
        return f"{type(model).__name__}.activation_checkpointing = True"
    if declares_checkpointing(model) and callable(getattr(model, HF_METHOD_NEW, None)):
        getattr(model, HF_METHOD_NEW)(activation_checkpointing_kwargs={"use_reentrant": False})
        return f"{type(model).__name__}.{HF_METHOD_NEW}(use_reentrant=False)"
    if declares_checkpointing(model):
        getattr(model, HF_METHOD)(gradient_checkpointing_kwargs={"use_reentrant": False})
        return f"{type(model).__name__}.{HF_METHOD}(use_reentrant=False)"
    raise ConfigRefused(
        f"memory.activation_checkpointing=true but {type(model).__name__} cannot checkpoint activations "
        f"(no supports_activation_checkpointing = True, no {HF_METHOD} with supports_gradient_checkpointing). "
        "Fix: memory=none."
    )
