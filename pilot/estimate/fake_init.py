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

A construction that copies a fake layer (``nn.TransformerEncoder(layer, n)`` deep-copies ``layer`` n
times) went through ``Tensor.__deepcopy__``, which reads a fake tensor's data pointer (PyTorch warns:
undefined behaviour): the next estimate in the process (a choice sheet computes several) crashed
the interpreter (a segmentation fault in the fake mode's cache, 2026-12-06). Inside ``ValuelessInit``
a fake tensor's deep copy is a new fake tensor of the same shape, strides, dtype, device and
``requires_grad`` (a parameter stays a parameter), with no value read.
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
        self._deepcopy = FakeTensor.__dict__.get("__deepcopy__")

    def __enter__(self) -> ValuelessInit:
        if self._original is not None:
            nn.init._no_grad_trunc_normal_ = self._draw
        FakeTensor.__deepcopy__ = _fake_copy
        return self

    def __exit__(self, *exc) -> None:
        if self._original is not None:
            nn.init._no_grad_trunc_normal_ = self._original
        if self._deepcopy is None:
            del FakeTensor.__deepcopy__
        else:
            FakeTensor.__deepcopy__ = self._deepcopy

    def _draw(self, tensor: Tensor, mean: float, std: float, a: float, b: float, generator=None) -> Tensor:
        if isinstance(tensor, FakeTensor):
            with torch.no_grad():
                return tensor.uniform_(a, b, generator=generator)
        return self._original(tensor, mean, std, a, b, generator=generator)


def _fake_copy(tensor: FakeTensor, memo: dict) -> Tensor:
    """A deep copy of a fake tensor: a new one alike, in its own fake mode, no value read."""
    if id(tensor) not in memo:
        with tensor.fake_mode, torch.no_grad():
            copy = torch.empty_strided(tensor.size(), tensor.stride(), dtype=tensor.dtype, device=tensor.device)
        wanted = tensor.requires_grad
        memo[id(tensor)] = (
            nn.Parameter(copy, wanted) if isinstance(tensor, nn.Parameter) else copy.requires_grad_(wanted)
        )
    return memo[id(tensor)]


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
