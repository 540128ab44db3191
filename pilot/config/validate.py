"""Cross-field validation: one pass before anything heavy, every problem at once.

Types and unknown keys are already checked by the schemas when Hydra composes
the config; this pass checks what needs several values together. Each problem
names the full key, the bad value and the fix, and ``validate`` raises a single
``ConfigError`` listing all of them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, List, Optional

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.data.task import enum_value
from pilot.errors import ConfigRefused


@dataclass
class Problem:
    key: str
    value: Any
    fix: str

    def __str__(self) -> str:
        return f"  - {self.key}={self.value!r}: {self.fix}"


class ConfigError(ConfigRefused):
    def __init__(self, problems: List[Problem]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the config:\n"
                         + "\n".join(str(p) for p in problems))


def import_target(path: str) -> Any:
    """Import ``package.module.attr`` without calling it."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ImportError(f"'{path}' is not a dotted path")
    return getattr(importlib.import_module(module_name), attr)


def _get(cfg: DictConfig, key: str) -> Any:
    return OmegaConf.select(cfg, key, default=None, throw_on_missing=False)


def _positive(cfg, key: str, problems: List[Problem], allow_zero: bool = False) -> None:
    value = _get(cfg, key)
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        problems.append(Problem(key, value, f"must be {bound}."))


def _check_target(cfg, key: str, problems: List[Problem]) -> Optional[Any]:
    path = _get(cfg, key)
    if not path:
        problems.append(Problem(key, path, "missing: name the class or factory to build, "
                                           "e.g. pilot.models.tiny_gpt.TinyGPT."))
        return None
    try:
        return import_target(path)
    except (ImportError, AttributeError) as error:
        problems.append(Problem(key, path, f"cannot be imported ({error}). Fix: give the full "
                                           "dotted path of an importable class or function."))
        return None


def _check_numbers(cfg, problems: List[Problem]) -> None:
    for key in ("batch.micro_batch", "batch.accumulation", "batch.eval_micro_batch",
                "distributed.replicas", "budget.value"):
        _positive(cfg, key, problems)
    for key in ("optim.lr", "optim.warmup_updates", "optim.grad_clip", "optim.weight_decay",
                "optim.momentum", "run.log_every"):
        _positive(cfg, key, problems, allow_zero=key != "run.log_every")
    ratio = _get(cfg, "optim.min_lr_ratio")
    if ratio is not None and not 0.0 <= ratio <= 1.0:
        problems.append(Problem("optim.min_lr_ratio", ratio, "must lie in [0, 1]."))
    val, test = _get(cfg, "data.split.val_fraction"), _get(cfg, "data.split.test_fraction")
    for key, value in (("data.split.val_fraction", val), ("data.split.test_fraction", test)):
        if value is not None and not 0.0 <= value < 1.0:
            problems.append(Problem(key, value, "must lie in [0, 1)."))
    if val is not None and test is not None and val + test >= 1.0:
        problems.append(Problem("data.split.val_fraction", val,
                                f"with data.split.test_fraction={test} nothing is left to train on. "
                                "Fix: keep val_fraction + test_fraction below 1."))


def _check_precision(cfg, device_type: str, problems: List[Problem]) -> None:
    dtype = enum_value(_get(cfg, "precision.dtype"))
    scaler = _get(cfg, "precision.grad_scaler")
    if dtype == "fp16" and not scaler:
        problems.append(Problem("precision.grad_scaler", scaler,
                                "fp16 needs a gradient scaler or small gradients underflow to zero. "
                                "Fix: precision.grad_scaler=true, or precision=bf16."))
    if dtype in ("fp32", "bf16") and scaler:
        problems.append(Problem("precision.grad_scaler", scaler,
                                f"loss scaling is only for fp16; with {dtype} it hides nothing and "
                                "changes the update. Fix: precision.grad_scaler=false."))
    if dtype == "bf16" and device_type == "cuda" and torch.cuda.is_available() \
            and not torch.cuda.is_bf16_supported():
        problems.append(Problem("precision.dtype", dtype, "this GPU has no bf16 support. "
                                "Fix: precision=fp16 or precision=fp32."))


def _check_model_and_data(cfg, problems: List[Problem]) -> None:
    model_cls = _check_target(cfg, "model._target_", problems)
    _check_target(cfg, "data._target_", problems)
    if _get(cfg, "memory.activation_checkpointing") and model_cls is not None \
            and not getattr(model_cls, "supports_activation_checkpointing", False):
        problems.append(Problem("memory.activation_checkpointing", True,
                                f"{_get(cfg, 'model._target_')} does not support activation "
                                "checkpointing. Fix: memory=none, or a model that sets "
                                "supports_activation_checkpointing = True."))
    head, classes = _get(cfg, "model.num_classes"), _get(cfg, "data.num_classes")
    if head is not None and classes is not None and head != classes:
        problems.append(Problem("model.num_classes", head,
                                f"the head has {head} outputs but data.num_classes={classes}: the "
                                "loss would still compute while training the wrong task. "
                                f"Fix: model.num_classes={classes}."))
    model_len, data_len = _get(cfg, "model.max_len"), _get(cfg, "data.max_len")
    if model_len is not None and data_len is not None and model_len < data_len:
        problems.append(Problem("model.max_len", model_len,
                                f"shorter than data.max_len={data_len}. Fix: model.max_len>={data_len}."))


def _check_devices(cfg, device_type: str, problems: List[Problem]) -> None:
    backend = enum_value(_get(cfg, "distributed.backend"))
    replicas = _get(cfg, "distributed.replicas") or 1
    requested = enum_value(_get(cfg, "run.device"))
    if requested == "cuda" and not torch.cuda.is_available():
        problems.append(Problem("run.device", requested, "no CUDA device is visible. "
                                "Fix: run.device=auto or run.device=cpu."))
    if backend == "nccl" and device_type != "cuda":
        problems.append(Problem("distributed.backend", backend, "NCCL needs CUDA devices. "
                                "Fix: distributed.backend=gloo (or auto) on CPU."))
    if device_type == "cuda" and replicas > max(1, torch.cuda.device_count()):
        problems.append(Problem("distributed.replicas", replicas,
                                f"only {torch.cuda.device_count()} GPU(s) visible. "
                                "Fix: fewer replicas, or run.device=cpu."))


def _check_rental(cfg, problems: List[Problem]) -> None:
    from pilot.rental.catalog import catalog_problems
    rental = _get(cfg, "rental")
    if rental is None:
        return
    for key, value, fix in catalog_problems(rental.catalog):
        problems.append(Problem(key, value, fix))
    names = list(rental.catalog or {})
    if rental.gpu is not None and rental.gpu not in names:
        problems.append(Problem("rental.gpu", rental.gpu, f"not in the catalog. Fix: one of {', '.join(names)}, "
                                "or add it as +rental.catalog.NAME={memory_gib: ..., fp32_tflops: ...}."))
    for key in ("margin", "reserve_gib", "closing_reserve_minutes"):
        _positive(cfg, f"rental.{key}", problems, allow_zero=True)
    utilisation = _get(cfg, "rental.utilisation")
    if utilisation is not None and not 0 < utilisation <= 1:
        problems.append(Problem("rental.utilisation", utilisation, "a share of the peak: 0 < value <= 1 "
                                "(0.3-0.5 is typical for transformer training)."))
    for key in ("counts", "packages_days"):
        values = list(_get(cfg, f"rental.{key}") or [])
        if not values or any(v <= 0 for v in values):
            problems.append(Problem(f"rental.{key}", values, "a non-empty list of positive numbers."))
    if rental.gpu_count is not None and rental.gpu_count <= 0:
        problems.append(Problem("rental.gpu_count", rental.gpu_count, "must be > 0 (or null)."))
    seq_len = _get(cfg, "estimate.seq_len")
    if seq_len is not None and seq_len <= 1:
        problems.append(Problem("estimate.seq_len", seq_len, "must be > 1 (or null for data.max_len)."))
    tolerance = _get(cfg, "estimate.tolerance")
    if tolerance is not None and tolerance <= 0:
        problems.append(Problem("estimate.tolerance", tolerance, "a relative tolerance > 0, e.g. 0.10."))


def resolve_device(cfg) -> torch.device:
    requested = enum_value(_get(cfg, "run.device")) or "auto"
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def validate(cfg: DictConfig) -> None:
    """Raise one ConfigError naming every problem; return None when the config is sound."""
    problems: List[Problem] = []
    try:
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as error:  # missing values, broken interpolations
        problems.append(Problem(getattr(error, "full_key", "?"), "???",
                                f"{type(error).__name__}: {error}".splitlines()[0]))
    device_type = resolve_device(cfg).type if enum_value(_get(cfg, "run.device")) != "cuda" \
        or torch.cuda.is_available() else "cpu"
    _check_numbers(cfg, problems)
    _check_precision(cfg, device_type, problems)
    _check_model_and_data(cfg, problems)
    _check_devices(cfg, device_type, problems)
    _check_rental(cfg, problems)
    if problems:
        raise ConfigError(problems)
