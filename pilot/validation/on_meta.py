"""The configured model built on the meta device (no memory, no values), for checks that need only its
structure before anything runs: its classes, whether it declares activation checkpointing."""

from __future__ import annotations

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch.overrides import TorchFunctionMode

from pilot.models.pretrained_shapes import ShapesOnlyPretrained

_BUILT: dict[tuple[str, str], torch.nn.Module | None] = {}  # the last few models built, by what defines them
_KEEP = 4


def model_on_meta(cfg) -> torch.nn.Module | None:
    """``cfg.model`` instantiated on the meta device (a ``from_pretrained`` inside it builds from the saved
    config, reading no weight), the global RNG left as it was; None when it cannot be built there (the
    run's own build then decides, and refuses what it must). Built once for each model config (resolved)
    and default dtype: the checks that read it, and a sweep's check of each job then the job's own, share
    it (a build on the meta device is ~20 ms for the default model; callers only read it)."""
    key = _defining(cfg)
    if key is not None and key in _BUILT:
        return _BUILT[key]
    try:
        with (
            torch.device("meta"),
            torch.random.fork_rng(devices=[]),
            ShapesOnlyPretrained(cfg.model.get("_target_")),
            _NoValuesWritten(),
        ):
            model = instantiate(cfg.model, _convert_="all")
    except Exception:  # noqa: BLE001
        model = None
    if key is not None:
        if len(_BUILT) >= _KEEP:
            _BUILT.pop(next(iter(_BUILT)))
        _BUILT[key] = model
    return model


def _defining(cfg) -> tuple[str, str] | None:
    """What the model built here depends on: its config with every interpolation resolved, and the
    default dtype its parameters take; None when the config does not resolve (then built each time)."""
    try:
        return OmegaConf.to_yaml(cfg.model, resolve=True), str(torch.get_default_dtype())
    except Exception:  # noqa: BLE001 - an interpolation only the run resolves
        return None


# in-place ops that write a tensor's values and leave its shape, dtype and device as they are: what
# initialisers call (torch.nn.init's, transformers' ``_init_weights``, a module's own ``reset_parameters``)
_WRITES_VALUES_ONLY = frozenset(
    "normal_ uniform_ trunc_normal_ exponential_ log_normal_ cauchy_ geometric_ random_ bernoulli_ erfinv_ clamp_ "
    "clamp_min_ clamp_max_ fill_ zero_ mul_ div_ add_ sub_ addcmul_ addcdiv_ copy_ sqrt_ abs_ neg_ exp_ log_ "
    "fill_diagonal_".split()
)


class _NoValuesWritten(TorchFunctionMode):
    """A meta tensor holds no values: an initialiser's in-place write returns its tensor as it is. Some of
    those ops' meta kernels are written in Python and import ``torch._dynamo`` (1.4 s) on first use, which
    a process that never trains (a sweep's launcher checking every job) would pay for nothing."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        initialiser = getattr(func, "__module__", "") == "torch.nn.init" and name.endswith("_")  # normal_(tensor)
        if initialiser or name in _WRITES_VALUES_ONLY:
            tensor = args[0] if args else kwargs.get("tensor")
            operands = [*args[1:], *kwargs.values()]
            if isinstance(tensor, torch.Tensor) and tensor.is_meta and _would_write(tensor, operands, initialiser):
                return tensor
        return func(*args, **kwargs)


def _would_write(tensor: torch.Tensor, others: list, initialiser: bool) -> bool:
    """Whether the real op would write ``tensor`` rather than refuse: a leaf that requires grad is written
    only without grad (``torch.nn.init``'s functions take it themselves), and every tensor operand must
    broadcast to its shape (``copy_`` of another shape is refused). A refusal is left to the op itself, as
    the real build meets it."""
    if tensor.requires_grad and torch.is_grad_enabled() and not initialiser:
        return False
    try:
        return all(
            torch.broadcast_shapes(other.shape, tensor.shape) == tensor.shape
            for other in others
            if isinstance(other, torch.Tensor)
        )
    except RuntimeError:
        return False
