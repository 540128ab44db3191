"""``memory=checkpointing`` asks the model to checkpoint activations: does it say it can?

A model class says so itself (``supports_activation_checkpointing``, transformers'
``gradient_checkpointing_enable`` with ``supports_gradient_checkpointing``). A factory function
(``_target_: my_models.build``) is built on the meta device (no memory, no values), and the model it
returns answers, whatever the function itself claims. A factory that cannot be built there is left to
the run, which refuses such a model when it builds it (``enable_checkpointing``).
"""

from __future__ import annotations

from typing import Any

from pilot.config.values import select
from pilot.engine.checkpointing import declares_checkpointing
from pilot.validation.on_meta import model_on_meta
from pilot.validation.problems import Problem


def _factory_declares(cfg) -> bool:
    """The model a factory ``_target_`` returns, built on the meta device, declares checkpointing; True
    when it cannot be built there (the run's own build decides)."""
    model = model_on_meta(cfg)
    return model is None or declares_checkpointing(model)


def check_checkpointing(cfg, model_target: Any, problems: list[Problem]) -> None:
    """Refuse ``memory.activation_checkpointing=true`` for a model that cannot checkpoint activations."""
    if not select(cfg, "memory.activation_checkpointing") or model_target is None:
        return
    if isinstance(model_target, type) and declares_checkpointing(model_target):
        return
    if not isinstance(model_target, type) and _factory_declares(cfg):
        return
    what = "" if isinstance(model_target, type) else "builds a model that "
    problems.append(
        Problem(
            "memory.activation_checkpointing",
            True,
            f"{select(cfg, 'model._target_')} {what}does not support activation checkpointing. Fix: "
            "memory=none, or a model that sets supports_activation_checkpointing = True or has "
            "transformers' gradient_checkpointing_enable.",
        )
    )
