"""Peak device memory of each training phase, estimated without allocating it.

The configured model, optimizer and the engine's own update code
(``Trainer.forward_backward`` and ``Trainer.apply_update``) run under PyTorch's
``FakeTensorMode``: every tensor has a shape, dtype and device but no storage,
so a 7-billion-parameter configuration costs a few hundred MiB of host memory.
``MemTracker`` (``torch.distributed._tools.mem_tracker``) sees every tensor the
operations create and sorts it into parameters, gradients, optimizer state,
activations and temporaries; its peak is the estimate. Run the same code on
real tensors (``fake=False``) and the same tracker *measures* it: that is how
the estimate is validated (``validate_estimate``, a pilot step, and the tests).

Phases, as the campaign meets them:
- ``first_step``: the first update, which allocates the optimizer state;
- ``steady_step``: every later update (optimizer state already there);
- ``eval_longest``: a forward pass without gradients on the longest sequences
  at the evaluation micro-batch.
An update runs ``min(accumulation, 2)`` micro-batches: activations are freed
after each backward, so the second micro-batch (gradients already held) is the
worst; more of them change nothing but time. Sequence tasks run at the
longest length a batch can have (``estimate.seq_len``, default ``data.max_len``)
with every token real and in the loss; other tasks run on their longest real
examples. The optimizer uses PyTorch's multi-tensor (foreach) kernels, CUDA's
default, whose temporaries count in the optimizer step's peak.
"""

from __future__ import annotations

import copy
import resource
import time
import traceback
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict

from pilot.config.values import enum_value
from pilot.data.task import TaskData, move_to
from pilot.engine.build import build_model
from pilot.errors import PilotError

NOT_COVERED = (
    "the CUDA context and the kernels' own code (hundreds of MiB per process, outside PyTorch's "
    "tensors): covered by rental.reserve_gib, a declared value, not a measurement",
    "allocator rounding and fragmentation (reserved > allocated): covered by rental.margin, declared",
    "kernels whose workspace differs on a GPU: the estimate runs the kernels PyTorch picks for the "
    "CPU (fused attention too, which keeps no attention matrix), and a GPU kernel may keep other "
    "intermediates; cuBLAS/cuDNN workspaces are not counted",
    "DDP's gradient buckets (added by the choice sheet as one more copy of the gradients per replica) "
    "and communication buffers; sharded strategies (FSDP/ZeRO) are not estimated",
    "fp16's gradient scaler overflow check (a few scalars; its data-dependent skip cannot run on fake "
    "tensors, so the estimate steps unconditionally)",
)
CATEGORIES = {
    "Parameter": "parameters",
    "Gradient": "gradients",
    "Optstate": "optimizer_state",
    "Activation": "activations",
    "Temp": "temporaries",
    "Buffer": "buffers",
    "Other": "other",
}
PHASES = ("first_step", "steady_step", "eval_longest")


class EstimateRefused(PilotError, ValueError):
    """The configuration cannot be estimated without allocating; the message says why and what to do."""


def _tracker_class():
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as error:  # torch < 2.5 or a build without torch.distributed
        raise EstimateRefused(
            f"this PyTorch ({torch.__version__}) has no torch.distributed._tools.mem_tracker "
            f"({error}). Fix: install torch>=2.5 (the README pins 2.13.0)."
        ) from error

    class GlobalPeakTracker(MemTracker):
        """MemTracker keeping the global peak only.

        The stock tracker also updates every module's peak after every operation (cost: operations x
        modules; 20 s instead of 2 s per update of a 32-layer model). Per-module peaks are not used.
        """

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


class _NoHook:
    """Stands in for the gradient hook of a frozen parameter; removing it does nothing."""

    def remove(self) -> None:
        pass


_NO_HOOK = _NoHook()


def _breakdown(snapshot: dict[Any, dict[Any, int]]) -> dict[str, int]:
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


@dataclass
class PhaseEstimate:
    phase: str
    peak_bytes: int
    breakdown: dict[str, int]  # at the moment of the peak
    during: str  # "forward/backward" or "optimizer step" or "forward"
    micro_batch: int
    micro_batches: int
    seq_len: int | None
    allocator_peak_bytes: int | None = None  # measured on CUDA (fake=False, device cuda): max_memory_allocated
    moments: dict[str, dict[str, int]] = field(default_factory=dict)  # breakdown at each part's own peak


@dataclass
class MemoryEstimate:
    fake: bool  # True: estimated on fake tensors; False: measured
    phases: list[PhaseEstimate]
    parameters: int  # count
    state_bytes: dict[str, int]  # persistent after an update: parameters, optimizer_state
    closed_form: dict[str, int]  # the same from counts alone (must be equal)
    flops_per_micro_batch: int  # forward + backward (+ recomputation), counted
    flops_per_eval_batch: int  # forward only
    settings: dict[str, Any]
    seconds: float
    host_rss_peak_bytes: int  # of this process, at the end (ru_maxrss)
    notes: list[str] = field(default_factory=list)

    @property
    def peak_bytes(self) -> int:
        return max(p.peak_bytes for p in self.phases)

    @property
    def peak_phase(self) -> PhaseEstimate:
        return max(self.phases, key=lambda p: p.peak_bytes)

    def phase(self, name: str) -> PhaseEstimate:
        return next(p for p in self.phases if p.phase == name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["peak_bytes"] = self.peak_bytes
        data["not_covered"] = list(NOT_COVERED)
        return data


def _variant(cfg: DictConfig, micro_batch: int | None, checkpointing: bool | None) -> DictConfig:
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        if micro_batch is not None:
            cfg.batch.micro_batch = int(micro_batch)
        if checkpointing is not None:
            cfg.memory.activation_checkpointing = bool(checkpointing)
    return cfg


def target_seq_len(cfg: DictConfig, task: TaskData) -> int | None:
    """The sequence length the estimate runs at, or None for tasks without sequences."""
    asked = OmegaConf.select(cfg, "estimate.seq_len")
    if asked is not None:
        if task.synthetic_batch is None:
            raise EstimateRefused(
                f"estimate.seq_len={asked}, but the task ({task.kind}) has no synthetic_batch, so pilot "
                "cannot build inputs of that length without guessing how the task encodes them. Fix: "
                "remove estimate.seq_len (its longest real examples are used), or give the task a "
                'synthetic_batch(micro_batch, seq_len) (README, "Your own model and data").'
            )
        return int(asked)
    if task.synthetic_batch is not None:
        length = OmegaConf.select(cfg, "data.max_len")
        if length is None:
            raise EstimateRefused(
                "the task builds sequences but data.max_len is not set. Fix: set "
                "estimate.seq_len to the longest sequence the campaign will see."
            )
        return int(length)
    return None


def _batch(task: TaskData, split: str, count: int, seq_len: int | None) -> dict[str, Any]:
    if seq_len is not None:
        return task.synthetic_batch(count, seq_len)
    from pilot.phases.gates import longest_items

    longest = longest_items(task, split, count)
    return task.collate([longest[i % len(longest)] for i in range(count)])


def _shape_len(batch: dict[str, Any]) -> int | None:
    ids = batch.get("input_ids")
    return int(ids.shape[-1]) if ids is not None else None


def estimate_memory(
    cfg: DictConfig,
    task: TaskData | None = None,
    *,
    fake: bool = True,
    micro_batch: int | None = None,
    activation_checkpointing: bool | None = None,
    device: str = "cpu",
) -> MemoryEstimate:
    """Per-phase peak memory of one replica for ``cfg`` (optionally another micro-batch or
    checkpointing setting), estimated on fake tensors or, with ``fake=False``, measured — on
    ``device`` ("cuda" adds the caching allocator's peak per phase; fake runs are CPU-only)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    from pilot.engine.trainer import Trainer

    started = time.perf_counter()
    cfg = _variant(cfg, micro_batch, activation_checkpointing)
    task = task if task is not None else instantiate(cfg.data, _convert_="all")
    seq_len = target_seq_len(cfg, task)
    micro = int(cfg.batch.micro_batch)
    eval_micro = int(cfg.batch.eval_micro_batch)
    accumulation = int(cfg.batch.accumulation)
    runs = min(accumulation, 2)
    train_batch = _batch(task, "train", micro, seq_len)
    eval_batch = _batch(task, "val", eval_micro, seq_len)
    update_targets = max(1, int(task.target_count(train_batch)) * runs)
    train_items = task.encoded("train")
    precision = enum_value(cfg.precision.dtype)
    notes = []
    if bool(cfg.precision.grad_scaler):
        notes.append("fp16 gradient scaler: estimated without its data-dependent overflow skip")
    target = torch.device(device)
    if fake and target.type != "cpu":
        raise EstimateRefused(f"device={device}: the fake-tensor estimate runs on the CPU. Fix: device='cpu'.")
    on_cuda = target.type == "cuda"
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else nullcontext()
    tracker_class = _tracker_class()
    phases: list[PhaseEstimate] = []
    try:
        with torch.random.fork_rng(devices=[]), mode:  # the caller's random state is left as it was
            model = build_model(cfg)
            if cfg.memory.activation_checkpointing and not getattr(model, "supports_activation_checkpointing", False):
                raise EstimateRefused(
                    f"memory.activation_checkpointing=true but {type(model).__name__} does "
                    "not support it. Fix: memory=none."
                )
            trainer = Trainer(cfg, task, model, target, train_items=train_items, optimizer_foreach=True)
            trainer.scaler = torch.amp.GradScaler(target.type, enabled=False)
            eval_batch = move_to(eval_batch, target)
            allocator: dict[str, int] = {}
            tracker = tracker_class()
            tracker.track_external(model, trainer.optimizer)
            counter = FlopCounterMode(display=False)

            def tracked(work) -> dict[str, int]:
                tracker.reset_mod_stats()
                if on_cuda:
                    torch.cuda.synchronize(target)
                    torch.cuda.reset_peak_memory_stats(target)
                with tracker:
                    work()
                if on_cuda:
                    torch.cuda.synchronize(target)
                    allocator["peak"] = max(allocator.get("peak", 0), torch.cuda.max_memory_allocated(target))
                return _breakdown(tracker.get_tracker_snapshot("peak"))

            def one_update(name: str, count_flops: bool) -> None:
                def forward_backward():
                    for k in range(runs):
                        tracker.reset_mod_stats()  # the tracker refuses a second root forward otherwise
                        with counter if count_flops and k == 0 else nullcontext():
                            trainer.forward_backward(train_batch, 1.0, update_targets, last=k == runs - 1)

                allocator.clear()
                fb = tracked(forward_backward)
                step = tracked(trainer.apply_update)
                worst, during = (fb, "forward/backward") if fb["total"] >= step["total"] else (step, "optimizer step")
                phases.append(
                    PhaseEstimate(
                        name,
                        worst["total"],
                        worst,
                        during,
                        micro,
                        runs,
                        _shape_len(train_batch),
                        allocator.get("peak"),
                        {"forward/backward": fb, "optimizer step": step},
                    )
                )

            one_update("first_step", count_flops=False)
            one_update("steady_step", count_flops=True)
            flops_train = int(counter.get_total_flops())
            state = _breakdown(tracker.get_tracker_snapshot("current"))

            eval_counter = FlopCounterMode(display=False)

            @torch.no_grad()
            def evaluate():
                model.eval()
                with eval_counter, trainer.autocast():
                    output = task.forward(model, eval_batch)
                    task.loss_sum(output, eval_batch)
                model.train()

            allocator.clear()
            worst = tracked(evaluate)
            phases.append(
                PhaseEstimate(
                    "eval_longest",
                    worst["total"],
                    worst,
                    "forward",
                    eval_micro,
                    1,
                    _shape_len(eval_batch),
                    allocator.get("peak"),
                    {"forward": worst},
                )
            )
            params = [p for p in model.parameters()]
            count = sum(p.numel() for p in params)
            param_bytes = sum(p.numel() * p.element_size() for p in params)
            closed = {"parameters": param_bytes, "optimizer_state": _optimizer_closed_form(cfg, params)}
    except EstimateRefused:
        raise
    except Exception as error:
        if not fake:
            raise
        raise EstimateRefused(refusal_reason(error)) from error
    return MemoryEstimate(
        fake=fake,
        phases=phases,
        parameters=count,
        state_bytes={"parameters": state["parameters"], "optimizer_state": state["optimizer_state"]},
        closed_form=closed,
        flops_per_micro_batch=flops_train,
        flops_per_eval_batch=int(eval_counter.get_total_flops()),
        settings={
            "model": str(cfg.model._target_),
            "micro_batch": micro,
            "accumulation": accumulation,
            "eval_micro_batch": eval_micro,
            "seq_len": seq_len if seq_len is not None else _shape_len(train_batch),
            "precision": precision,
            "optimizer": enum_value(cfg.optim.name),
            "activation_checkpointing": bool(cfg.memory.activation_checkpointing),
            "replicas": int(cfg.distributed.replicas),
        },
        seconds=time.perf_counter() - started,
        host_rss_peak_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        notes=notes,
    )


def _raised_at(error: BaseException) -> str:
    """Where an error was raised: the innermost frame outside torch, as ``file.py:line in function``."""
    frames = traceback.extract_tb(error.__traceback__)
    outside = [f for f in frames if "/torch/" not in f.filename.replace("\\", "/")] or frames
    if not outside:
        return "an unknown place"
    frame = outside[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} in {frame.name}"


def refusal_reason(error: BaseException) -> str:
    """The refusal message for an error raised under fake tensors, naming its real cause.

    Only an operation that needs a tensor's *value* (``.item()``, ``if tensor``, a shape that depends
    on the data) is blamed on reading values; an operator without a fake implementation and any
    other error are reported as what they are, with where they were raised.
    """
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )

    first_line = (str(error).splitlines() or [""])[0][:300]
    what = f"{type(error).__name__}: {first_line}"
    where = _raised_at(error)
    data_dependent = (DataDependentOutputException, DynamicOutputShapeException)
    if isinstance(error, data_dependent) or type(error).__name__.startswith("GuardOnDataDependent"):
        return (
            f"the model or task code cannot run on fake tensors: it reads a tensor value or makes a "
            f"shape depend on the data ({what}; raised at {where}); pilot refuses to guess its memory. "
            "Fix: avoid reading tensor values inside forward/loss (e.g. .item(), data-dependent "
            "shapes), or measure it on a real device with the pilot's phases."
        )
    if isinstance(error, UnsupportedOperatorException):
        return (
            f"the model or task code cannot run on fake tensors: operator {first_line} has no "
            f"fake-tensor implementation (raised at {where}); pilot refuses to guess its memory. "
            "Fix: use an operator PyTorch can run on fake tensors, or measure it on a real device "
            "with the pilot's phases."
        )
    return (
        f"the estimator could not run the model, task or update code ({what}; raised at {where}); "
        "pilot refuses to guess its memory. This is not a value read; fix the error (run "
        "estimate_memory(cfg, fake=False) to see it on real tensors) or measure it on a real device "
        "with the pilot's phases."
    )


def _optimizer_closed_form(cfg: DictConfig, params: list[torch.Tensor]) -> int:
    """Optimizer state from counts alone: AdamW keeps two moments per parameter plus one step
    scalar (float32) per tensor; SGD with momentum one buffer per parameter."""
    trained = [p for p in params if p.requires_grad]
    moments = sum(p.numel() * p.element_size() for p in trained)
    if enum_value(cfg.optim.name) == "sgd":
        return moments if float(cfg.optim.momentum) > 0 else 0
    return 2 * moments + 4 * len(trained)
