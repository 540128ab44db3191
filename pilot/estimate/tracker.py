"""The memory tracker the estimate runs under, and its snapshots as bytes per category.

``MemTracker`` (``torch.distributed._tools.mem_tracker``) sees every tensor an operation creates
and sorts it into parameters, gradients, optimizer state, activations and temporaries; on fake
tensors and on real ones alike (``pilot.estimate.fake_tensor``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

from pilot.estimate.refusal import EstimateRefused

CATEGORIES = {
    "Parameter": "parameters",
    "Gradient": "gradients",
    "Optstate": "optimizer_state",
    "Activation": "activations",
    "Temp": "temporaries",
    "Buffer": "buffers",
    "Other": "other",
}


def tracker_class():
    """The tracker class to run under (``EstimateRefused`` on a PyTorch without MemTracker)."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as error:  # torch < 2.5 or a build without torch.distributed
        raise EstimateRefused(
            f"this PyTorch ({torch.__version__}) has no torch.distributed._tools.mem_tracker "
            f"({error}). Fix: install torch>=2.5 (the README pins 2.13.0)."
        ) from error

    class GlobalPeakTracker(MemTracker):
        """MemTracker keeping the global peak only. The stock tracker also updates every module's peak
        after every operation (operations x modules: 20 s instead of 2 s per update of a 32-layer model)."""

        def __enter__(self):
            """Also silences ModTracker's "module hierarchy tracking" warning (hooks firing out of order,
            ModernBERT's): it concerns the per-module attribution, not used; the global peak is unaffected."""
            self._quiet = warnings.catch_warnings()
            self._quiet.__enter__()
            warnings.filterwarnings("ignore", message="The module hierarchy tracking")
            warnings.filterwarnings("ignore", message="Module is None. Skipping")
            return super().__enter__()

        def __exit__(self, *args):
            try:
                return super().__exit__(*args)
            finally:
                self._quiet.__exit__(None, None, None)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is _DEVICE:  # C++ asking a fake tensor its device (70% of a fake run's calls): no tensor made,
                return _device(args, kwargs)  # answered here, not passed through the modes below (15% of a 7B's time)
            return super().__torch_dispatch__(func, types, args, kwargs)

        def _update_peak_stats(self, peak_state) -> None:  # noqa: D401 - same contract as the parent
            snapshots = getattr(self, "_curr_mem_snap", None)
            if snapshots is None or not hasattr(self, "_peak_mem"):  # another torch layout: stock path
                return super()._update_peak_stats(peak_state)
            for device, snap in snapshots.items():
                total = snap["Total"]
                if self._peak_mem.get(device, 0) < total:
                    self._peak_mem[device] = total
                    self._peak_mem_snap[device] = dict(snap)

        def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
            """Frozen parameters (``requires_grad=False``) are tracked as parameters, never hooked.

            The stock tracker registers a gradient hook on every parameter of a module it enters,
            and ``Tensor.register_hook`` raises on a tensor that does not require gradients: a frozen
            backbone made every estimate fail. A frozen parameter never gets a gradient, so a
            no-op handle in the tracker's hook table is exactly right (it removes handles on exit).
            """
            handles = getattr(self, "_param_to_grad_hook_handles", None)
            if install_grad_hooks and handles is not None:
                for param in module.parameters():
                    if not param.requires_grad and handles.get(param, None) is None:
                        handles[param] = (_NO_HOOK, _NO_HOOK)
            return super()._track_module_params_and_buffers(module, install_grad_hooks)

    return GlobalPeakTracker


_DEVICE = torch.ops.prim.device.default


def _device(args: tuple, kwargs: dict | None) -> torch.device:
    """``prim.device`` of a fake tensor as ``FakeTensor.__torch_dispatch__`` answers it; anything else as asked."""
    tensor = args[0] if len(args) == 1 else None
    if isinstance(tensor, FakeTensor):
        return torch.device("meta") if tensor.fake_mode.in_kernel_invocation else tensor.fake_device
    return _DEVICE(*args, **(kwargs or {}))


class _NoHook:
    """Stands in for the gradient hook of a frozen parameter; removing it does nothing."""

    def remove(self) -> None:
        pass


_NO_HOOK = _NoHook()


def breakdown(snapshot: dict[Any, dict[Any, int]]) -> dict[str, int]:
    """{category: bytes, "total": bytes} summed over devices (a fake run has one)."""
    out = {name: 0 for name in CATEGORIES.values()}
    total = 0
    for device_snap in snapshot.values():
        for key, value in device_snap.items():
            name = getattr(key, "value", key)
            if name == "Total":
                total += int(value)
            elif name in CATEGORIES:
                out[CATEGORIES[name]] += int(value)
    out["total"] = total
    return out


def left_after(tracker: Any) -> int:
    """The activations and temporaries ``tracker`` still counts (after a micro-batch: what it left)."""
    now = breakdown(tracker.get_tracker_snapshot("current"))
    return now["activations"] + now["temporaries"]


def steady_growth(left: list[int]) -> int:
    """Bytes the tracker's count grew by after every micro-batch of an update, each ending where the one
    before it did (``left_after``): with nothing in Python left to hold them (PyTorch's MemTracker on real
    tensors under transformers' activation checkpointing with a frozen base and LoRA), its own accounting
    drift; 0 when it did not grow after every one."""
    growth = [later - earlier for earlier, later in zip(left, left[1:])]
    return min(growth) if growth and min(growth) > 0 else 0


class Meter:
    """The tracker around each part of a phase; on CUDA also the caching allocator's peak."""

    def __init__(self, tracker: Any, device: torch.device):
        self.tracker, self.device = tracker, device
        self.allocator_peak: int | None = None  # since the phase began (CUDA only)

    def __call__(self, work: Callable[[], Any]) -> dict[str, int]:
        """Bytes per category at the peak of ``work``."""
        on_cuda = self.device.type == "cuda"
        self.tracker.reset_mod_stats()
        if on_cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        with self.tracker:
            work()
        if on_cuda:
            torch.cuda.synchronize(self.device)
            self.allocator_peak = max(self.allocator_peak or 0, torch.cuda.max_memory_allocated(self.device))
        return breakdown(self.tracker.get_tracker_snapshot("peak"))
