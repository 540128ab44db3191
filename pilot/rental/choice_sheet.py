"""The choice sheet: for every catalog GPU and count, does the campaign fit, and how.

Per row (GPU x count): the distribution strategy — one GPU; DDP with one whole
replica per GPU when the model states (parameters, gradients, optimizer state,
plus DDP's gradient buckets) fit one GPU; FSDP over the row's GPUs when they do
not, when the config asks for FSDP (``distributed=fsdp``), or when DDP's whole copies fit no
setting of the row (``row_fit.fit_or_shard``), estimated per rank on a fake process group of that size. Then the largest micro-batch (halving from
the configured one) that fits with the declared margin and reserve, without
activation checkpointing first and with it next, keeping the effective batch
(accumulation = examples per update / GPUs / micro-batch). Time per update is
the pilot's measurement when the pilot ran on that GPU model with that setup,
otherwise counted FLOPs over the GPU's peak at the declared utilisation, plus
the gradient all-reduce (DDP) or the all-gathers and reduce-scatters (FSDP)
over the catalog's link bandwidth (vendor datasheet figures), not overlapped
with compute — labelled as an estimate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from omegaconf import DictConfig, OmegaConf

from pilot.config.values import enum_value
from pilot.rental.catalog import Gpu
from pilot.rental.estimate_cache import EstimateCache, MissingEstimate
from pilot.rental.requirements import Requirement, catalog_statuses
from pilot.rental.row_fit import fit_or_shard
from pilot.rental.row_reasons import fit_notes, no_fit_reason, sharding_reason
from pilot.rental.update_time import time_per_update

GIB = 2**30


@dataclass
class Measured:
    """What the pilot measured on this machine (None where it did not)."""

    device_name: str  # torch.cuda.get_device_name(), or "cpu"
    seconds_per_update: float | None  # steady_steps
    eval_seconds_per_batch: float | None  # eval_longest: one batch of the longest examples
    closing_seconds: float | None  # export + reload_check
    peak_bytes: int | None = None  # CUDA: the largest peak allocated over the training phases


@dataclass
class ChoiceRow:
    gpu: str
    count: int
    memory_gib: float
    strategy: str
    fits: bool
    need_gib: float | None  # estimated peak per GPU x (1 + margin) + reserve
    headroom_gib: float | None  # memory - need
    micro_batch: int | None
    accumulation: int | None
    precision: str
    activation_checkpointing: bool | None
    seconds_per_update: float | None
    time_source: str
    reason: str
    requirements: str = ""  # what the configuration requires of this GPU, met or not
    requirements_met: bool | None = None  # False: a hard requirement unmet (bf16 on a T4); None: not known
    ranks: int = 1  # FSDP ranks the row's estimate is for; 1: each GPU holds the whole model
    price_per_hour: float | None = None  # per GPU, the catalog's (yours); None: not given
    cost_per_update: float | None = None  # price_per_hour x count x seconds_per_update / 3600, where both are known

    def as_dict(self) -> dict:
        return asdict(self)


def _precision_for(gpu: Gpu, precision: str) -> tuple[str, str, float | None]:
    """(precision to use, note, peak TFLOP/s)."""
    peak = gpu.peak_tflops(precision)
    if peak is not None:
        return precision, "", peak
    if precision == "bf16" and gpu.fp16_tflops is not None:
        return (
            "fp16",
            "no bf16 on this GPU: fp16 with the gradient scaler instead — a variant to check "
            "with +experiment=memory_variants before renting",
            gpu.fp16_tflops,
        )
    return precision, f"no {precision} throughput in the catalog entry", gpu.fp32_tflops


def compute_precision(cfg: DictConfig) -> str:
    """The dtype the matmuls run in: autocast's (``precision.dtype``) when it is bf16 or fp16, else the
    parameters' own (``model.dtype=bf16`` without autocast computes in bf16: its rows' precision, the bf16
    peak for their time)."""
    precision = enum_value(cfg.precision.dtype)
    weights = str(OmegaConf.select(cfg, "model.dtype", default=None) or "")
    return weights if precision == "fp32" and weights in ("bf16", "fp16") else precision


@dataclass(frozen=True)
class _Setup:
    """The config's side of every row, read once: margins, the configured batch and precision, and the
    model states (parameters, gradients, optimizer state) at the configured setup."""

    margin: float
    reserve: float  # bytes
    utilisation: float
    micro_batch: int
    replicas: int
    examples_per_update: int
    checkpointing: bool
    settings: list[bool]  # activation checkpointing tried in this order: as configured, then on
    precision: str
    param_bytes: int
    gradient_bytes: int  # the trainable parameters' (an adapter's alone on a frozen base)
    optimizer_bytes: int
    states: int  # parameters, gradients, optimizer state
    fsdp_asked: bool  # distributed=fsdp: every row with several GPUs shards
    parameters: int  # counts, for the communication volume
    trainable_parameters: int
    compute_bytes: int  # per gathered parameter: 2 in bf16/fp16 (FSDP's MixedPrecisionPolicy), 4 in fp32
    gathers_per_micro_batch: int  # FSDP: forward, and backward again when reshard_after_forward
    sync_every_micro_batch: bool

    @classmethod
    def read(cls, cfg: DictConfig, cache: EstimateCache) -> _Setup:
        rental = cfg.rental
        margin, reserve = float(rental.margin), float(rental.reserve_gib) * GIB
        utilisation = float(rental.utilisation)
        micro_cfg, accum_cfg = int(cfg.batch.micro_batch), int(cfg.batch.accumulation)
        replicas_cfg = int(cfg.distributed.replicas)
        examples_per_update = micro_cfg * accum_cfg * replicas_cfg
        checkpointing_cfg = bool(cfg.memory.activation_checkpointing)
        base = cache.base  # checkpointing tried where the model the base estimate built declares it
        settings = [checkpointing_cfg] + (
            [True] if not checkpointing_cfg and base.settings.get("model_can_checkpoint", False) else []
        )
        precision_cfg = compute_precision(cfg)
        whole = base.whole_states  # what one GPU holds unsharded (an FSDP config's estimate is rank 0's)
        param_bytes, gradient_bytes = whole["parameters"], whole["gradients"]
        states = param_bytes + gradient_bytes + whole["optimizer_state"]
        return cls(
            margin,
            reserve,
            utilisation,
            micro_cfg,
            replicas_cfg,
            examples_per_update,
            checkpointing_cfg,
            settings,
            precision_cfg,
            param_bytes,
            gradient_bytes,
            whole["optimizer_state"],
            states,
            enum_value(cfg.distributed.strategy) == "fsdp",
            base.parameters,
            base.trainable_parameters,
            4 if precision_cfg == "fp32" else 2,
            2 if cfg.distributed.fsdp.reshard_after_forward else 1,
            bool(cfg.distributed.fsdp.sync_every_micro_batch),
        )


def choice_rows(
    cfg: DictConfig,
    cache: EstimateCache,
    catalog: list[Gpu],
    measured: Measured | None = None,
    requirements: list[Requirement] | None = None,
) -> list[ChoiceRow]:
    statuses = catalog_statuses(requirements, catalog) if requirements is not None else {}
    setup = _Setup.read(cfg, cache)
    rows = []
    for gpu in catalog:
        precision, precision_note, peak_tflops = _precision_for(gpu, setup.precision)
        for count in [int(c) for c in cfg.rental.counts]:
            row = dict(
                gpu=gpu.name,
                count=count,
                memory_gib=gpu.memory_gib,
                strategy="single GPU" if count == 1 else f"DDP, {count} replicas",
                fits=False,
                need_gib=None,
                headroom_gib=None,
                micro_batch=None,
                accumulation=None,
                precision=precision,
                activation_checkpointing=None,
                seconds_per_update=None,
                time_source="",
                reason="",
                requirements=statuses[gpu.name].text if gpu.name in statuses else "not examined",
                requirements_met=statuses[gpu.name].met if gpu.name in statuses else None,
                ranks=1,
                price_per_hour=gpu.price_per_hour,
            )
            try:
                _fill_row(row, setup, cache, gpu, measured, precision_note, peak_tflops)
            except MissingEstimate:  # a probing cache: this row needs that estimate first
                continue
            rows.append(ChoiceRow(**row))
    return rows


def _unsplit(setup: _Setup, count: int) -> str:
    return f"the effective batch ({setup.examples_per_update} examples per update) does not split over {count} GPUs"


def _fill_row(
    row: dict,
    setup: _Setup,
    cache: EstimateCache,
    gpu: Gpu,
    measured: Measured | None,
    precision_note: str,
    peak_tflops: float | None,
) -> None:
    """One GPU x count: why it does not fit, or the micro-batch, checkpointing, need and time that fit."""
    count, capacity = row["count"], gpu.memory_gib * GIB
    if setup.examples_per_update % count:
        row["reason"] = _unsplit(setup, count)
        return
    per_replica = setup.examples_per_update // count
    ranks, buckets, state_need = _strategy(row, setup, capacity)
    if ranks > 1 and row["precision"] == "fp16":
        row["reason"] = "no bf16 on this GPU, and pilot's FSDP runs bf16 or fp32 only (no sharded fp16 gradient scaler)"
        return
    if state_need > capacity:
        row["need_gib"] = state_need / GIB
        row["headroom_gib"] = (capacity - state_need) / GIB
        row["reason"] = sharding_reason(setup, state_need, ranks, row["precision"])
        return
    chosen, smallest, ranks = fit_or_shard(row, setup, cache, per_replica, buckets, capacity, ranks)
    if chosen is None:
        row["need_gib"] = smallest[0] / GIB
        row["headroom_gib"] = (capacity - smallest[0]) / GIB
        row["reason"] = no_fit_reason(setup, smallest, count if ranks == 1 and row["precision"] != "fp16" else 1)
        return
    micro, checkpointing, estimate, need = chosen
    same_setup = _pilot_setup(measured, gpu, count, micro, checkpointing, row["precision"], setup)
    peak_note = ""
    if same_setup and measured.peak_bytes:
        need, peak_note = _with_measured_peak(need, measured, setup)
        if need > capacity:
            row.update(
                need_gib=need / GIB,
                headroom_gib=(capacity - need) / GIB,
                reason="the pilot's measured peak does not fit with the margin and reserve",
            )
            return
    same_setup = same_setup and measured.seconds_per_update is not None
    seconds, source = time_per_update(
        same_setup, measured, estimate, per_replica // micro, peak_tflops, setup, gpu, row
    )
    notes = fit_notes(setup, estimate, peak_note, micro, per_replica, checkpointing, precision_note)
    row.update(
        fits=True,
        need_gib=need / GIB,
        headroom_gib=(capacity - need) / GIB,
        micro_batch=micro,
        accumulation=per_replica // micro,
        activation_checkpointing=checkpointing,
        seconds_per_update=seconds,
        time_source=source,
        reason="; ".join(notes),
        cost_per_update=None if gpu.price_per_hour is None else gpu.price_per_hour * count * seconds / 3600,
    )


def _pilot_setup(
    measured: Measured | None, gpu: Gpu, count: int, micro: int, checkpointing: bool, precision: str, setup: _Setup
) -> bool:
    """Whether the pilot measured this row's setup: the same GPU model, count, micro-batch, checkpointing
    and precision."""
    return (
        measured is not None
        and gpu.matches(measured.device_name)
        and count == setup.replicas
        and micro == setup.micro_batch
        and checkpointing == setup.checkpointing
        and precision == setup.precision
    )


def _strategy(row: dict, setup: _Setup, capacity: float) -> tuple[int, int, float]:
    """(FSDP ranks or 1, DDP's bucket bytes, the model states' need per GPU) of a row: DDP when the
    states fit one GPU, else — or when the config asks for FSDP — FSDP over the row's GPUs."""
    count = row["count"]
    buckets = setup.gradient_bytes if count > 1 else 0  # DDP keeps a flat copy of the gradients
    state_need = (setup.states + buckets) * (1 + setup.margin) + setup.reserve
    if count == 1 or not (setup.fsdp_asked or state_need > capacity):
        return 1, buckets, state_need
    row.update(strategy=f"FSDP, {count} ranks", ranks=count)
    # no buckets; each rank holds 1/count of the states (the estimate adds FSDP's padding)
    return count, 0, setup.states / count * (1 + setup.margin) + setup.reserve


def _with_measured_peak(need: float, measured: Measured, setup: _Setup) -> tuple[float, str]:
    """The need from the larger of the estimated and the measured peak (same GPU model and setup)."""
    measured_need = measured.peak_bytes * (1 + setup.margin) + setup.reserve
    peak_note = (
        f"need from the larger of the estimated and the measured peak "
        f"({measured.peak_bytes / GIB:.2f} GiB allocated in the pilot)"
    )
    if measured_need > need:
        need = measured_need
    return need, peak_note


def row_overrides(cfg: DictConfig, row: ChoiceRow) -> list[str]:
    """The command-line overrides that make ``cfg`` run as ``row`` says (the plan's hardware): only the
    settings that differ — processes and strategy, micro-batch and accumulation, checkpointing, precision."""
    found = []
    strategy = "fsdp" if row.ranks > 1 else "ddp"
    if row.count != int(cfg.distributed.replicas) or strategy != enum_value(cfg.distributed.strategy):
        group = "single" if row.count == 1 else ("fsdp" if strategy == "fsdp" else "ddp2")
        found += [f"distributed={group}"] + ([f"distributed.replicas={row.count}"] if row.count > 1 else [])
    if row.micro_batch != int(cfg.batch.micro_batch):
        found.append(f"batch.micro_batch={row.micro_batch}")
    if row.accumulation != int(cfg.batch.accumulation):
        found.append(f"batch.accumulation={row.accumulation}")
    if bool(row.activation_checkpointing) != bool(cfg.memory.activation_checkpointing):
        found.append(f"memory.activation_checkpointing={str(bool(row.activation_checkpointing)).lower()}")
    if row.precision != compute_precision(cfg):
        found.append(f"precision={row.precision}")
    return found


def candidates(
    rows: list[ChoiceRow], gpu: str | None = None, count: int | None = None, precision: str | None = None
) -> list[ChoiceRow]:
    """The rows the plan chooses among: those that fit the pinned hardware (the user's call), else those
    that fit, run the configured ``precision`` (not a substitute such as fp16 for bf16: a variant never
    piloted) and are not known to miss a requirement — those known to meet them, or when none is known,
    those of unknown capability."""
    fitting = [r for r in rows if r.fits and (gpu is None or r.gpu == gpu) and (count is None or r.count == count)]
    if gpu is None:
        fitting = [
            r for r in fitting if r.requirements_met is not False and (precision is None or r.precision == precision)
        ]
        fitting = [r for r in fitting if r.requirements_met] or fitting
    return fitting


def recommended(
    rows: list[ChoiceRow], gpu: str | None = None, count: int | None = None, precision: str | None = None
) -> ChoiceRow | None:
    """The plan's hardware among the ``candidates``: the cheapest per update when every one has a
    price_per_hour, else the smallest rental (fewest GPUs, then least memory in total, then fastest)."""
    fitting = candidates(rows, gpu, count, precision)
    if not fitting:
        return None
    if all(r.cost_per_update is not None for r in fitting):
        return min(fitting, key=lambda r: (r.cost_per_update, r.count, r.seconds_per_update or 0.0))
    return min(fitting, key=lambda r: (r.count, r.count * r.memory_gib, r.seconds_per_update or 0.0))
