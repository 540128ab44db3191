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

import warnings

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
