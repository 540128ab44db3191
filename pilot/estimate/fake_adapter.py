"""An adapter on a base built under ``FakeTensorMode``.

peft moves each new adapter layer to its base layer's device and dtype with ``Module.to``, and a
module of fake tensors cannot be moved (``_apply`` swaps every fake parameter, and a fake tensor
carries weak references that forbid it). So the adapter is built on real tensors, outside the fake
mode, at its base layer's (fake) device and dtype, exactly as peft builds it for a real base; then
each of its tensors is made fake by the same mode (``from_tensor``: shape, dtype, device,
``requires_grad`` kept). The real copies are the adapter's size only (rank x widths per layer);
a module peft copies whole (``modules_to_save``) is rebuilt in the mode, never made real.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import torch
from omegaconf import DictConfig
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

from pilot.models.adapter import apply_adapter


def _fake_mode_of(model: torch.nn.Module):
    for tensor in (*model.parameters(), *model.buffers()):
        if isinstance(tensor, FakeTensor):
            return tensor.fake_mode
    return None


def adapter_on(model: torch.nn.Module, cfg: DictConfig) -> torch.nn.Module:
    """``apply_adapter(model, cfg)``, for a real base or a fake one."""
    mode = _fake_mode_of(model)
    if mode is None:
        return apply_adapter(model, cfg)
    with unset_fake_temporarily(), warnings.catch_warnings():
        # Tensor.__deepcopy__ asks a fake tensor's data pointer (modules_to_save): torch's own, harmless here
        warnings.filterwarnings("ignore", "Accessing the data pointer of FakeTensor", UserWarning)
        adapted = apply_adapter(model, cfg)
    for module in adapted.modules():
        for name, param in list(module._parameters.items()):
            if param is not None and not _ours(param, mode):
                module._parameters[name] = torch.nn.Parameter(_in_mode(param, mode), param.requires_grad)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None and not _ours(buffer, mode):
                module._buffers[name] = _in_mode(buffer, mode)
    return adapted


def _ours(tensor: torch.Tensor, mode) -> bool:
    return isinstance(tensor, FakeTensor) and tensor.fake_mode is mode


def _in_mode(tensor: torch.Tensor, mode) -> torch.Tensor:
    """A real tensor made fake by ``mode``; a fake one of another mode (peft's ``modules_to_save``
    deep-copies a fake module outside the mode) rebuilt in it: same shape, stride, dtype, device."""
    if not isinstance(tensor, FakeTensor):
        return mode.from_tensor(tensor)
    with mode:
        return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device)


class FakeAdapterMoves:
    """While entered, peft's move of a new adapter to its base layer's device and dtype gives the adapter's
    modules new parameters there: ``Module.to`` cannot swap a fake tensor ("Couldn't swap Linear.weight"),
    and a factory of the user's own that calls ``get_peft_model`` was refused an estimate on fake tensors.
    ``active``: a model built by a factory outside pilot (peft is imported for it, when installed)."""

    def __init__(self, active: bool) -> None:
        self.layer, self.original = None, None
        if active and importlib.util.find_spec("peft") is not None:
            self.layer = getattr(importlib.import_module("peft.tuners.tuners_utils"), "BaseTunerLayer", None)

    def __enter__(self) -> FakeAdapterMoves:
        if self.layer is not None:
            self.original = original = self.layer._move_adapter_to_device_of_base_layer

            def move(layer: Any, adapter_name: str, device: Any = None) -> None:
                try:
                    original(layer, adapter_name, device)
                except RuntimeError as error:
                    if "swap" not in str(error):
                        raise
                    _moved_anew(layer, adapter_name, device)

            self.layer._move_adapter_to_device_of_base_layer = move
        return self

    def __exit__(self, *exc: object) -> None:
        if self.original is not None:
            self.layer._move_adapter_to_device_of_base_layer = self.original


def _moved_anew(layer: Any, adapter_name: str, device: Any) -> None:
    """Each parameter of ``layer``'s adapter ``adapter_name`` replaced by one on its base layer's device and
    (floating point) dtype, as peft's move would leave it."""
    weight = getattr(layer.get_base_layer(), "weight", None)
    device = device if device is not None else getattr(weight, "device", None)
    dtype = weight.dtype if weight is not None and weight.dtype.is_floating_point else None
    for name in (*layer.adapter_layer_names, *layer.other_param_names):
        holder = getattr(layer, name, None)
        if not isinstance(holder, (torch.nn.ModuleDict, torch.nn.ParameterDict)) or adapter_name not in holder:
            continue
        item = holder[adapter_name]
        if isinstance(item, torch.nn.Parameter):
            holder[adapter_name] = torch.nn.Parameter(_cast(item, device, dtype), item.requires_grad)
            continue
        for module in item.modules():
            for key, param in list(module._parameters.items()):
                if param is not None:
                    module._parameters[key] = torch.nn.Parameter(_cast(param, device, dtype), param.requires_grad)


def _cast(tensor: torch.Tensor, device: Any, dtype: torch.dtype | None) -> torch.Tensor:
    return tensor.to(device=device, dtype=dtype if tensor.is_floating_point() else None).detach()
