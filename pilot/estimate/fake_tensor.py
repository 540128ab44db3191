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
- ``steady_steps``: every later update (optimizer state already there);
- ``eval_longest``: a forward pass without gradients on the longest sequences
  at the evaluation micro-batch.
A measured update runs ``min(accumulation, 2)`` micro-batches: activations are
freed after each backward, so the second micro-batch (gradients already held)
is the worst; more of them change nothing but time. The estimate runs that
worst micro-batch alone (the gradients it finds held are given to it), once:
``steady_steps``' forward/backward is ``first_step``'s plus the optimizer state
then held, its optimizer step runs again. Both shortcuts are checked against
the full measured run (the pilot's ``estimate`` check, the tests). Sequence tasks run at the
longest length a batch can have (``estimate.seq_len``, default ``data.max_len``)
with every token real and in the loss; other tasks run on their longest real
examples. The optimizer uses PyTorch's multi-tensor (foreach) kernels, CUDA's
default, whose temporaries count in the optimizer step's peak.
"""

from __future__ import annotations

import logging
import resource
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig
from torch._subclasses.fake_tensor import FakeTensorMode

from pilot.config.values import enum_value
from pilot.data.task import Batch, ContractError, TaskData, batch_seq_len, move_to
from pilot.engine.checkpointing import declares_checkpointing
from pilot.engine.forward import forward_loss
from pilot.engine.trainer import Trainer
from pilot.estimate.closed_form import closed_forms
from pilot.estimate.fake_init import built_model
from pilot.estimate.fake_kernels import RealKernelDtypes
from pilot.estimate.flops import FlopTotal
from pilot.estimate.held_gradients import hold_gradients, release_unwritten
from pilot.estimate.inputs import EstimateInputs, config_variant, estimate_inputs, fake_inputs, length_notes
from pilot.estimate.local_shards import LocalShardOptimizer
from pilot.estimate.mask_reads import FakeMaskPaths
from pilot.estimate.ranks import Ranks, estimate_ranks
from pilot.estimate.refusal import EstimateRefused, refusal_reason, settings_in_message
from pilot.estimate.tracker import Meter, breakdown, left_after, steady_growth, tracker_class

NOT_COVERED = (
    "the CUDA context and the kernels' own code (hundreds of MiB per process, outside PyTorch's "
    "tensors): covered by rental.reserve_gib, a declared value, not a measurement",
    "allocator rounding and fragmentation (reserved > allocated): covered by rental.margin, declared",
    "kernels whose workspace differs on a GPU: the estimate runs the kernels PyTorch picks for the "
    "CPU (fused attention too, which keeps no attention matrix), and a GPU kernel may keep other "
    "intermediates; cuBLAS/cuDNN workspaces are not counted",
    "DDP's gradient buckets (added by the choice sheet as one more copy of the gradients per replica) "
    "and the communication library's own buffers (NCCL's); FSDP is estimated as rank 0 of its ranks on a "
    "fake process group: its gathered parameters and reduce-scatter buffers count, NCCL's do not",
    "fp16's gradient scaler overflow check (a few scalars; its data-dependent skip cannot run on fake "
    "tensors, so the estimate steps unconditionally)",
)
STEADY = "steady_steps"  # every update after the first: the name phases.csv gives the same phase
PHASES = ("first_step", STEADY, "eval_longest")


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
    tracker_drift_bytes: int = 0  # measured: the tracker's own drift per micro-batch (tracker.steady_growth)


@dataclass
class MemoryEstimate:
    fake: bool  # True: estimated on fake tensors; False: measured
    phases: list[PhaseEstimate]
    parameters: int  # count (a frozen base's included)
    trainable_parameters: int  # count: what gets gradients and optimizer state (an adapter's alone)
    state_bytes: dict[str, int]  # persistent after an update: parameters, optimizer_state
    closed_form: dict[str, int]  # the same from counts alone (must be equal), and the gradients (FSDP: rank 0's)
    whole_states: dict[str, int]  # parameters, gradients, optimizer state of the whole model (unsharded)
    flops_per_micro_batch: int  # forward + backward (+ recomputation), counted
    flops_per_eval_batch: int  # forward only
    settings: dict[str, Any]
    seconds: float
    host_rss_peak_bytes: int  # of this process, at the end (ru_maxrss)
    notes: list[str] = field(default_factory=list)
    computed_seconds: float | None = None  # read from the estimate store: what computing it took then

    @property
    def cost_seconds(self) -> float:
        """What computing this estimate takes (not reading it back)."""
        return self.computed_seconds if self.computed_seconds is not None else self.seconds

    @property
    def peak_bytes(self) -> int:
        return max(p.peak_bytes for p in self.phases)

    @property
    def peak_phase(self) -> PhaseEstimate:
        return max(self.phases, key=lambda p: p.peak_bytes)

    def phase(self, name: str) -> PhaseEstimate:
        return next(p for p in self.phases if p.phase == name)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryEstimate:
        """What ``dataclasses.asdict`` made of one (a file written by another process)."""
        return cls(**{**data, "phases": [PhaseEstimate(**phase) for phase in data["phases"]]})

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["peak_bytes"] = self.peak_bytes
        data["not_covered"] = list(NOT_COVERED)
        return data


def _update_phase(
    name: str,
    trainer: Trainer,
    meter: Meter,
    inputs: EstimateInputs,
    counter: FlopTotal | None = None,
    shortcut: bool = False,
) -> PhaseEstimate:
    """One update (``counter``: counts the FLOPs of its first micro-batch); its peak is its
    forward/backward's or its optimizer step's, whichever is higher.

    ``shortcut`` (the fake-tensor estimate): the worst micro-batch only — the last one, run with the
    gradients an earlier micro-batch leaves already held — instead of running the earlier ones too.
    """
    runs = 1 if shortcut else inputs.runs

    held, written = ([], set())
    if shortcut and inputs.runs > 1:
        held, written = hold_gradients(trainer.raw_model, meter.tracker)

    settled: list[int] = []  # the tracker's activations and temporaries after each micro-batch

    def forward_backward():
        trainer.model.train()  # as the run trains it: from_pretrained returns a model in eval mode, which
        # drops dropout's masks and transformers' activation checkpointing from what is estimated
        for k in range(runs):
            meter.tracker.reset_mod_stats()  # the tracker refuses a second root forward otherwise
            counting.counting = k == 0
            trainer.forward_backward(inputs.train_batch, 1.0, inputs.update_targets, last=k == runs - 1)
            settled.append(left_after(meter.tracker))
        counting.counting = False

    meter.allocator_peak = None
    counting = counter if counter is not None else FlopTotal()
    with counting if counter is not None else nullcontext():  # beneath the tracker: it sees what training runs
        fb = meter(forward_backward)
    # FSDP writes a sharded gradient by reduce-scatter, without this hook: every one held stays
    release_unwritten(held, written, fb, release=not trainer.sharded)
    step = meter(trainer.apply_update)
    phase = _phase(name, inputs, fb, step, meter.allocator_peak)
    phase.tracker_drift_bytes = steady_growth(settled)
    return phase


def _phase(
    name: str, inputs: EstimateInputs, fb: dict[str, int], step: dict[str, int], allocator_peak: int | None
) -> PhaseEstimate:
    worst, during = (fb, "forward/backward") if fb["total"] >= step["total"] else (step, "optimizer step")
    moments = {"forward/backward": fb, "optimizer step": step}
    seq_len = batch_seq_len(inputs.train_batch)
    return PhaseEstimate(
        name, worst["total"], worst, during, inputs.micro_batch, inputs.runs, seq_len, allocator_peak, moments
    )


def _steady_from_first(first: PhaseEstimate, meter: Meter, inputs: EstimateInputs) -> PhaseEstimate:
    """Every later update, from the first one: its forward/backward is the first update's with the
    optimizer state now held (the same operations on the same tensors, plus a constant the update
    does not touch: the peak moves by exactly that amount); its optimizer step is the first one's.
    The optimizers pilot builds (``engine.optim``: AdamW, SGD) allocate their whole state at the
    start of their first step, before any kernel runs, so every step's kernels run beside the same
    parameters, gradients and state: running the step again on fake tensors gave the same bytes in
    every category for every configuration tried by hand (fp32, bf16, fp16, SGD with momentum and
    weight decay, clipping, LoRA on a transformers model, checkpointing, FSDP at 2 and 4 ranks;
    2026-12-05), and ``tests/test_estimate.py`` measures the premise on real tensors, every step
    run, for each optimizer config. Running it again cost 0.4 s of a 7B estimate. The pilot checks
    the phase against a full run on real tensors, which runs every step (``validate``)."""
    held = breakdown(meter.tracker.get_tracker_snapshot("current"))["optimizer_state"]
    fb = dict(first.moments["forward/backward"])
    fb["optimizer_state"] += held
    fb["total"] += held
    return _phase(STEADY, inputs, fb, dict(first.moments["optimizer step"]), None)


def _eval_phase(
    task: TaskData, trainer: Trainer, meter: Meter, inputs: EstimateInputs, batch: Batch, counter: FlopTotal
) -> PhaseEstimate:
    """A forward pass without gradients on the evaluation ``batch`` (its FLOPs in ``counter``)."""
    model = trainer.raw_model

    @torch.no_grad()
    def evaluate():
        model.eval()
        forward_loss(task, model, batch, trainer.device, trainer.autocast)
        model.train()

    meter.allocator_peak = None
    with counter:  # beneath the tracker: it sees the operations evaluation runs, not their decomposition
        worst = meter(evaluate)
    micro, seq_len = inputs.eval_micro_batch, batch_seq_len(batch)
    return PhaseEstimate(
        "eval_longest", worst["total"], worst, "forward", micro, 1, seq_len, meter.allocator_peak, {"forward": worst}
    )


@dataclass
class _Measured:
    phases: list[PhaseEstimate]
    parameters: int  # count
    trainable_parameters: int
    state: dict[str, int]  # bytes per category after the updates
    closed_form: dict[str, int]
    whole_states: dict[str, int]
    flops_per_micro_batch: int
    flops_per_eval_batch: int
    can_checkpoint: bool  # the built model declares activation checkpointing (a factory's says it only built)


def _run_phases(
    cfg: DictConfig,
    task: TaskData,
    inputs: EstimateInputs,
    target: torch.device,
    tracker_type: type,
    shortcut: bool,
    ranks: Ranks,
) -> _Measured:
    """Build the model and engine, then run and track every phase (under fake tensors when asked;
    ``shortcut``: the fake estimate's single forward/backward, see ``_update_phase``), as ``ranks``'
    rank 0 (FSDP: sharded over its mesh)."""
    model = built_model(cfg, fake=shortcut)
    if cfg.memory.activation_checkpointing and not declares_checkpointing(model):
        raise EstimateRefused(
            f"memory.activation_checkpointing=true but {type(model).__name__} does not support it. Fix: memory=none."
        )
    trainer = Trainer(
        cfg, task, model, target, ranks.ctx, train_items=inputs.train_items, optimizer_foreach=True, mesh=ranks.mesh
    )
    trainer.scaler = torch.amp.GradScaler(target.type, enabled=False)
    eval_batch = move_to(inputs.eval_batch, target)
    tracker = tracker_type()
    tracker.track_external(model, trainer.optimizer)
    meter, counter = Meter(tracker, target), FlopTotal()
    if shortcut:  # one forward/backward in all: the worst micro-batch of the first update
        if trainer.sharded:  # the optimizer's kernels on rank 0's local shards (see local_shards)
            trainer.optimizer = LocalShardOptimizer(trainer.optimizer)
            trainer.clip_gradients = trainer.optimizer.clip_gradients
        # FSDP without a gradient sync per micro-batch keeps whole gradients between them: all run
        whole_between = trainer.sharded and not trainer.sync_every_micro_batch
        first = _update_phase("first_step", trainer, meter, inputs, counter, shortcut=not whole_between)
        phases = [first, _steady_from_first(first, meter, inputs)]
    else:  # measured: every micro-batch of both updates, as the run does them
        phases = [
            _update_phase("first_step", trainer, meter, inputs),
            _update_phase(STEADY, trainer, meter, inputs, counter),
        ]
    state = breakdown(tracker.get_tracker_snapshot("current"))
    eval_counter = FlopTotal()
    phases.append(_eval_phase(task, trainer, meter, inputs, eval_batch, eval_counter))
    params = list(model.parameters())  # shared (tied) tensors once; FSDP: DTensors of the whole shape
    rank0, whole = closed_forms(cfg, params, ranks.ctx.world_size if trainer.sharded else 1)
    return _Measured(
        phases,
        sum(p.numel() for p in params),
        sum(p.numel() for p in params if p.requires_grad),
        state,
        rank0,
        whole,
        int(counter.get_total_flops()),
        int(eval_counter.get_total_flops()),
        declares_checkpointing(model),
    )


def _settings(cfg: DictConfig, inputs: EstimateInputs) -> dict[str, Any]:
    return {
        "model": str(cfg.model._target_),
        "micro_batch": inputs.micro_batch,
        "accumulation": inputs.accumulation,
        "eval_micro_batch": inputs.eval_micro_batch,
        "seq_len": inputs.seq_len if inputs.seq_len is not None else batch_seq_len(inputs.train_batch),
        "precision": enum_value(cfg.precision.dtype),
        "optimizer": enum_value(cfg.optim.name),
        "activation_checkpointing": bool(cfg.memory.activation_checkpointing),
        "replicas": int(cfg.distributed.replicas),
        "strategy": enum_value(cfg.distributed.strategy),  # fsdp: the numbers are rank 0's
    }


def _notes(cfg: DictConfig, mask_paths: object, inputs: EstimateInputs) -> list[str]:
    """What the estimate says beside its numbers: what it could not run as on real tensors, and a
    sequence length far past the data's."""
    scaler = ["fp16 gradient scaler: estimated without its data-dependent overflow skip"]
    return (scaler if bool(cfg.precision.grad_scaler) else []) + getattr(mask_paths, "notes", []) + length_notes(inputs)


def estimate_memory(
    cfg: DictConfig,
    task: TaskData | None = None,
    *,
    fake: bool = True,
    micro_batch: int | None = None,
    activation_checkpointing: bool | None = None,
    device: str = "cpu",
    ranks: int | None = None,
) -> MemoryEstimate:
    """Per-phase peak memory of one replica (FSDP: of rank 0) for ``cfg`` (optionally another
    micro-batch, checkpointing setting or number of FSDP ``ranks``; 1: unsharded), estimated on fake
    tensors or, with ``fake=False``, measured — on ``device`` ("cuda" adds the caching allocator's
    peak per phase; fake runs are CPU-only)."""
    started = time.perf_counter()
    cfg = config_variant(cfg, micro_batch, activation_checkpointing, ranks)
    task = task if task is not None else instantiate(cfg.data, _convert_="all")
    inputs = estimate_inputs(cfg, task)
    target = torch.device(device)
    if fake and target.type != "cpu":
        raise EstimateRefused(f"device={device}: the fake-tensor estimate runs on the CPU. Fix: device='cpu'.")
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else nullcontext()
    kernels = RealKernelDtypes() if fake else nullcontext()  # inside the fake mode, below the tracker
    paths = mask_paths = FakeMaskPaths() if fake else nullcontext()  # nn.Transformer's mask read: fakes only
    tracker_type = tracker_class()
    quiet, level = logging.getLogger("torch._subclasses.fake_tensor"), None  # it logs a fake kernel's
    if fake:  # refusal with a traceback: the refusal below says it once
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
    try:
        run_inputs = fake_inputs(mode, inputs) if fake else inputs
        with estimate_ranks(cfg, fake) as ranks, torch.random.fork_rng(devices=[]), mode, kernels, paths:  # RNG kept
            measured = _run_phases(cfg, task, run_inputs, target, tracker_type, fake, ranks)
    except EstimateRefused:
        raise
    except ContractError as error:  # the model cannot read the data (a table too short): said as it is
        raise EstimateRefused(str(error)) from error
    except Exception as error:
        if not fake:
            raise
        raise EstimateRefused(refusal_reason(error, settings_note=settings_in_message(cfg, error))) from error
    finally:
        if level is not None:
            quiet.setLevel(level)
    return MemoryEstimate(
        fake=fake,
        phases=measured.phases,
        parameters=measured.parameters,
        trainable_parameters=measured.trainable_parameters,
        state_bytes={key: measured.state[key] for key in ("parameters", "optimizer_state")},
        closed_form=measured.closed_form,
        whole_states=measured.whole_states,
        flops_per_micro_batch=measured.flops_per_micro_batch,
        flops_per_eval_batch=measured.flops_per_eval_batch,
        settings={**_settings(cfg, inputs), "model_can_checkpoint": measured.can_checkpoint},
        seconds=time.perf_counter() - started,
        host_rss_peak_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        notes=_notes(cfg, mask_paths, inputs),
    )
