"""Weight initialization that reads the values it draws, which fake tensors do not have.

PyTorch's ``nn.init.trunc_normal_`` (2.13) redraws the samples that fall outside ``[a, b]`` until
none does (``mask.any()``): on fake tensors that test has no value, and every model initialized
with it (ModernBERT, ViT, Swin, DeiT, ...) was refused an estimate, its forward blamed for a read
its construction made. An estimate needs the weights' shapes and dtypes, never their values:
inside ``ValuelessInit`` a *fake* tensor's truncated normal is drawn uniformly in ``[a, b]``
(in place, as the real one is); real tensors get PyTorch's own. Patched where ``trunc_normal_``
looks it up (``torch.nn.init._no_grad_trunc_normal_``), so every reference to
``nn.init.trunc_normal_``, including the copies a library keeps (transformers'
``TORCH_INIT_FUNCTIONS``), is covered. ``built_model`` builds the estimate's model inside it and
says a failure of the construction as the construction's, not the forward's.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from omegaconf import DictConfig
from torch import Tensor, nn
from torch._subclasses.fake_tensor import FakeTensor

from pilot.data.task import ContractError
from pilot.engine.build import build_model
from pilot.estimate.fake_adapter import FakeAdapterMoves, adapter_on
from pilot.estimate.refusal import EstimateRefused, refusal_reason
from pilot.models.pretrained_shapes import ShapesOnlyPretrained


class ValuelessInit:
    """While entered, a fake tensor's ``trunc_normal_`` draws without reading values."""

    def __init__(self) -> None:
        self._original = getattr(nn.init, "_no_grad_trunc_normal_", None)

    def __enter__(self) -> ValuelessInit:
        if self._original is not None:
            nn.init._no_grad_trunc_normal_ = self._draw
        return self

    def __exit__(self, *exc) -> None:
        if self._original is not None:
            nn.init._no_grad_trunc_normal_ = self._original

    def _draw(self, tensor: Tensor, mean: float, std: float, a: float, b: float, generator=None) -> Tensor:
        if isinstance(tensor, FakeTensor):
            with torch.no_grad():
                return tensor.uniform_(a, b, generator=generator)
        return self._original(tensor, mean, std, a, b, generator=generator)


def built_model(cfg: DictConfig, *, fake: bool) -> nn.Module:
    """The configured model, with its adapter when ``cfg.adapter`` asks; on fake tensors its weight
    initialization reads no values (``ValuelessInit``), and a failure is said to be its construction's."""
    try:
        own = str(cfg.model.get("_target_", "")).startswith("pilot.")  # else a factory that may call peft itself
        with (
            ValuelessInit(),
            ShapesOnlyPretrained(cfg.model.get("_target_")) if fake else nullcontext(),
            FakeAdapterMoves(fake and not own),
        ):
            return adapter_on(build_model(cfg, adapter=False), cfg)
    except (EstimateRefused, ContractError):
        raise
    except Exception as error:
        if not fake:
            raise
        raise EstimateRefused(refusal_reason(error, building=True)) from error
