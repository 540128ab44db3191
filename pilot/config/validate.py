"""One validation pass before anything runs: every problem at once, each with key, value and fix.

Hydra and the schemas already refuse a misspelt key, a wrong type or an unknown
option when they compose the config. This pass checks everything else a command
line can get wrong, in this order:

1. keys nothing reads (``+key=value`` bypasses the schema) and ``_target_`` arguments;
2. numbers: nan/inf anywhere, then the range of every numeric setting (``RANGES``);
3. settings that need several values (fp16 and the scaler, the head and the classes...);
4. what needs the data: the data file, the task's own refusals, and the batch plan
   against the training split (a micro-batch larger than the split, a budget that
   buys no update or an absurd number of them).

``validate`` raises a single ``ConfigError`` listing all of them. The run modes
call it first, before a run directory holds anything of pilot's.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.config.values import enum_value, import_target, resolve_device, select
from pilot.engine.batch_plan import plan_from_config
from pilot.errors import ConfigRefused, PilotError

# No optimizer here uses a larger peak lr: AdamW moves every weight by about lr per update
# (weights start near 0.02), and SGD's useful range ends near 1. Above it, a value is a typo.
MAX_PEAK_LR = 10.0
# 10x the longest published pre-training schedules (BERT: 1M updates, Devlin et al. 2019).
# Beyond it a budget is a unit mix-up (examples typed as updates, epochs as examples), and
# refusing it now beats a run that would hold its machine for years.
MAX_UPDATES = 10_000_000
# torch CPU threads (and CPU replicas) per usable core. More threads than cores only
# oversubscribe them; 4x leaves room for SMT and for a CPU quota narrower than the affinity
# mask. Far above it, torch.set_num_threads starts threads until the OS refuses and the
# process dies inside OpenMP without a Python error (run.threads=100000: a segfault).
THREADS_PER_CORE = 4
# numpy's legacy seeding (np.random.seed in train.seed_everything) takes 0 .. 2**32 - 1 only
MAX_SEED = 2**32 - 1
# Hydra's instantiate keys: never arguments of the target
HYDRA_KEYS = ("_target_", "_convert_", "_recursive_", "_partial_", "_args_")
# what turns a check off, for the message when someone writes nan or inf instead
OFF_VALUES = {
    "loop.divergence_factor": "0 turns the divergence rule off",
    "optim.grad_clip": "0 disables clipping",
    "campaign.quality_tolerance": "null skips the quality check",
}


@dataclass
class Problem:
    key: str
    value: Any
    fix: str

    def __str__(self) -> str:
        return f"  - {self.key}={self.value!r}: {self.fix}"


class ConfigError(ConfigRefused):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the config:\n" + "\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class Range:
    """Allowed values of a number; None leaves that side unbounded."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return self.high is None or not (value > self.high or (self.high_open and value == self.high))

    def __str__(self) -> str:
        if self.high is None:
            return f"be {'>' if self.low_open else '>='} {self.low}"
        return f"lie in {'(' if self.low_open else '['}{self.low}, {self.high}{')' if self.high_open else ']'}"


POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
SHARE = Range(0, 1)
BELOW_ONE = Range(0, 1, high_open=True)
SEQUENCE = Range(2)  # one token to predict from and one to predict
TWO_CLASSES = Range(2)

# Every numeric setting: (key, allowed range, why or what a boundary value means).
# model.* and data.* are checked by name, so they hold for any model or task using the name.
# Settings with a rule of their own (optim.lr, optim.betas, run.threads, seed,
# loop.divergence_factor, the budget) are in _check_special_numbers.
RANGES: tuple[tuple[str, Range, str], ...] = (
    ("model.vocab_size", POSITIVE, ""),
    ("model.max_len", SEQUENCE, "a sequence needs one token to predict from and one to predict"),
    ("model.d_model", POSITIVE, "the width of the residual stream"),
    ("model.n_layer", POSITIVE, "transformer blocks"),
    ("model.n_head", POSITIVE, "attention heads per block; they must divide model.d_model"),
    ("model.hidden", POSITIVE, "the width of each hidden layer"),
    ("model.n_hidden_layers", NON_NEGATIVE, "0 is a linear classifier"),
    ("model.in_features", POSITIVE, ""),
    ("model.num_classes", TWO_CLASSES, "one class leaves nothing to learn"),
    ("model.dropout", BELOW_ONE, "a probability; 1 would drop every activation (0 keeps runs reproducible)"),
    ("data.max_len", SEQUENCE, "a sequence needs one token to predict from and one to predict"),
    ("data.vocab_size", POSITIVE, ""),
    ("data.in_features", POSITIVE, ""),
    ("data.num_classes", TWO_CLASSES, "one class leaves nothing to learn"),
    ("data.split.val_fraction", BELOW_ONE, ""),
    ("data.split.test_fraction", BELOW_ONE, ""),
    ("precision.init_scale", POSITIVE, "the first loss scale of the gradient scaler, e.g. 65536"),
    ("batch.micro_batch", POSITIVE, ""),
    ("batch.accumulation", POSITIVE, ""),
    ("batch.eval_micro_batch", POSITIVE, ""),
    ("optim.weight_decay", NON_NEGATIVE, ""),
    ("optim.momentum", BELOW_ONE, "momentum 1 never forgets a gradient and the updates grow without bound"),
    ("optim.warmup_updates", NON_NEGATIVE, "0 starts at the peak lr"),
    ("optim.min_lr_ratio", SHARE, ""),
    ("optim.grad_clip", NON_NEGATIVE, "0 disables clipping"),
    ("budget.value", POSITIVE, ""),
    ("distributed.replicas", POSITIVE, ""),
    ("distributed.master_port", Range(0, 65535), "a TCP port; 0 picks a free one"),
    ("run.log_every", POSITIVE, ""),
    ("loop.eval_every", NON_NEGATIVE, "0 validates after the last update only"),
    ("loop.eval_examples", POSITIVE, "the validation examples every run is compared on"),
    ("loop.early_stop_patience", NON_NEGATIVE, "0 turns early stopping off"),
    (
        "campaign.quality_tolerance",
        NON_NEGATIVE,
        "a share of the control's validation loss, e.g. 0.02; null skips the quality check",
    ),
    ("estimate.seq_len", Range(1, low_open=True), "or null for data.max_len"),
    ("estimate.tolerance", POSITIVE, "a relative tolerance, e.g. 0.10"),
    ("rental.margin", NON_NEGATIVE, ""),
    ("rental.reserve_gib", NON_NEGATIVE, ""),
    ("rental.closing_reserve_minutes", NON_NEGATIVE, ""),
    (
        "rental.utilisation",
        Range(0, 1, low_open=True),
        "a share of the peak; 0.3-0.5 is typical for transformer training",
    ),
    ("rental.gpu_count", POSITIVE, "or null for the chosen row's count"),
    ("checkpoint.every", NON_NEGATIVE, "0 saves after the last update only"),
    ("checkpoint.keep_last", POSITIVE, "rotation keeps at least the newest valid checkpoint"),
    ("checkpoint.max_requeues", NON_NEGATIVE, "0 ends the run as preempted at the first interruption"),
    ("closing.control_examples", NON_NEGATIVE, "0 skips the closing check"),
    ("closing.rtol", NON_NEGATIVE, "0 = exact"),
    ("closing.atol", NON_NEGATIVE, "0 = exact"),
    ("pilot.show_examples", NON_NEGATIVE, "0 shows none"),
    ("pilot.steady_steps", POSITIVE, "the updates the steady_steps phase times"),
    ("pilot.tiny.examples", POSITIVE, "the training examples the loop must learn"),
    ("pilot.tiny.max_updates", POSITIVE, ""),
    (
        "pilot.tiny.loss_drop",
        Range(1),
        "the pass needs final loss <= initial loss / loss_drop; below 1 a rising loss would pass",
    ),
    ("pilot.tiny.min_recovery", SHARE, "a share of the subset's examples"),
    ("pilot.tiny.check_every", POSITIVE, ""),
    ("pilot.resume_check.updates_before", POSITIVE, "k: updates before the checkpoint"),
    ("pilot.resume_check.updates_total", POSITIVE, "n: updates both runs reach"),
    ("pilot.resume_check.rtol", NON_NEGATIVE, "0 = bit-identical"),
    ("pilot.resume_check.atol", NON_NEGATIVE, "0 = bit-identical"),
)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def usable_cores() -> int:
    """Cores this process may run on (a container's or a SLURM job's share), not the host's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


# --------------------------------------------------------------------------- 1. keys
def _check_unknown_keys(node: DictConfig, prefix: str, problems: list[Problem]) -> None:
    """A ``+key=value`` override skips the schema's struct flag: the key would be read by nothing
    (or, under model/data, break the call of ``_target_``). Schema'd nodes are checked here."""
    schema = OmegaConf.get_type(node)
    known = {f.name for f in fields(schema)} if is_dataclass(schema) else None
    for key in node.keys():
        full_key = f"{prefix}{key}"
        if known is not None and key not in known:
            problems.append(
                Problem(
                    full_key,
                    select(node, str(key)),
                    f"not a setting: nothing reads it (a '+' override adds keys the schema "
                    f"does not know). Fix: drop it, or one of {', '.join(sorted(known))}.",
                )
            )
            continue
        child = select(node, str(key))
        if isinstance(child, DictConfig) and full_key != "rental.catalog":  # the catalog: any GPU name
            _check_unknown_keys(child, f"{full_key}.", problems)


def _check_arguments(cfg: DictConfig, section: str, target: Any, problems: list[Problem]) -> None:
    """A plug-in's model or data has no schema: its keys must be arguments of its ``_target_``."""
    node = select(cfg, section)
    if not isinstance(node, DictConfig) or is_dataclass(OmegaConf.get_type(node)):
        return  # schema'd: _check_unknown_keys has it
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing to compare
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    names = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    given = [str(k) for k in node.keys() if k not in HYDRA_KEYS]
    path = select(cfg, f"{section}._target_")
    for key in given:
        if key not in names:
            problems.append(
                Problem(
                    f"{section}.{key}",
                    select(node, key),
                    f"not an argument of {path}, so calling it would fail. Fix: drop it, or one of {', '.join(names)}.",
                )
            )
    for parameter in parameters:
        if parameter.name in names and parameter.default is inspect.Parameter.empty and parameter.name not in given:
            problems.append(
                Problem(f"{section}.{parameter.name}", None, f"{path} requires it. Fix: {section}.{parameter.name}=...")
            )


# --------------------------------------------------------------------------- 2. numbers
def _check_finite(value: Any, key: str, problems: list[Problem]) -> None:
    """nan or inf is never a meaningful setting: every comparison with nan is false, so it would
    pass a range check and reach the optimizer, the scaler or a tolerance."""
    if isinstance(value, dict):
        for name, child in value.items():
            _check_finite(child, f"{key}.{name}" if key else str(name), problems)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _check_finite(child, f"{key}[{index}]", problems)
    elif _is_number(value) and not math.isfinite(value):
        hint = f" ({OFF_VALUES[key]})" if key in OFF_VALUES else ""
        problems.append(Problem(key, value, f"not a finite number. Fix: a finite value{hint}."))


def _check_ranges(cfg: DictConfig, problems: list[Problem]) -> None:
    for key, allowed, why in RANGES:
        value = select(cfg, key)
        if value is None or (_is_number(value) and not math.isfinite(value)):
            continue  # unset, or already reported as not finite
        if not _is_number(value):
            problems.append(Problem(key, value, f"must be a number; it must {allowed}."))
        elif value not in allowed:
            problems.append(Problem(key, value, f"must {allowed}" + (f" ({why})." if why else ".")))


def _check_special_numbers(cfg: DictConfig, problems: list[Problem]) -> None:
    """Numbers whose bound needs a reason of its own, or another value."""
    seed = select(cfg, "seed")
    if _is_number(seed) and not 0 <= seed <= MAX_SEED:
        problems.append(
            Problem(
                "seed",
                seed,
                f"must lie in [0, {MAX_SEED}]: numpy's seeding refuses anything else. Fix: a seed such as 0, 1, 2.",
            )
        )
    lr = select(cfg, "optim.lr")
    if _finite(lr) and lr < 0:
        problems.append(
            Problem(
                "optim.lr",
                lr,
                "must be >= 0: a negative lr climbs the loss. Fix: the peak lr, e.g. 1e-3 for AdamW or 0.1 for SGD.",
            )
        )
    elif _finite(lr) and lr > MAX_PEAK_LR:
        problems.append(
            Problem(
                "optim.lr",
                lr,
                f"no optimizer uses a peak lr above {MAX_PEAK_LR:g} (AdamW moves "
                "each weight by about lr per update, from weights of about 0.02). Fix: e.g. 1e-3 "
                "for AdamW or 0.1 for SGD; if you mean it (SGD on tiny gradients), scale the loss "
                "up instead: SGD's update lr x gradient stays the same.",
            )
        )
    decay = select(cfg, "optim.weight_decay")
    if _finite(lr) and _finite(decay) and lr * decay >= 1:
        # AdamW: w -= lr * decay * w (Loshchilov & Hutter 2019); SGD's L2 term does the same
        problems.append(
            Problem(
                "optim.weight_decay",
                decay,
                f"with optim.lr={lr:g} every update multiplies the weights by "
                f"1 - lr x weight_decay = {1 - lr * decay:.3g}, which zeroes or flips them. "
                f"Fix: optim.weight_decay < {1 / lr:g} (0.01-0.1 is typical for AdamW).",
            )
        )
    betas = select(cfg, "optim.betas")
    if betas is not None:
        values = list(betas)  # nan/inf: already reported by _check_finite
        if len(values) != 2 or not all(0 <= b < 1 for b in values if _finite(b)):
            problems.append(
                Problem(
                    "optim.betas", values, "two moment decay rates, each in [0, 1). Fix: e.g. optim.betas=[0.9,0.95]."
                )
            )
    _check_threads(cfg, problems)
    factor = select(cfg, "loop.divergence_factor")
    if _finite(factor) and factor != 0 and factor <= 1:
        problems.append(
            Problem(
                "loop.divergence_factor",
                factor,
                "must be > 1, or 0 to turn the rule off: a run is diverged when its loss "
                "exceeds factor x the first update's loss, so a factor <= 1 stops an ordinary "
                "run at its first noisy update. Fix: e.g. 4.0.",
            )
        )
    before, total = select(cfg, "pilot.resume_check.updates_before"), select(cfg, "pilot.resume_check.updates_total")
    if _is_number(before) and _is_number(total) and 0 < before and not before < total:
        problems.append(
            Problem(
                "pilot.resume_check.updates_before",
                before,
                f"must be below pilot.resume_check.updates_total={total}: the check resumes "
                f"after k updates and continues to n. Fix: e.g. pilot.resume_check.updates_before="
                f"{max(1, total // 2)}, or pilot.resume_check.updates_total={before * 2}.",
            )
        )
    fixed, value = enum_value(select(cfg, "budget.fixed")), select(cfg, "budget.value")
    if fixed == "updates" and _is_number(value) and value > MAX_UPDATES:
        problems.append(_too_many_updates(value, value, "updates"))
    val, test = select(cfg, "data.split.val_fraction"), select(cfg, "data.split.test_fraction")
    if _finite(val) and _finite(test) and val + test >= 1.0:
        problems.append(
            Problem(
                "data.split.val_fraction",
                val,
                f"with data.split.test_fraction={test} nothing is left to train on. "
                "Fix: keep val_fraction + test_fraction below 1.",
            )
        )


def _check_threads(cfg: DictConfig, problems: list[Problem]) -> None:
    threads, cores = select(cfg, "run.threads"), usable_cores()
    limit = THREADS_PER_CORE * cores
    if _is_number(threads) and threads < 0:
        problems.append(Problem("run.threads", threads, "must be >= 0 (0 = torch's default)."))
    elif _is_number(threads) and threads > limit:
        problems.append(
            Problem(
                "run.threads",
                threads,
                f"this process may use {cores} CPU core(s); more than {THREADS_PER_CORE} threads "
                "per core only oversubscribe them, and far more crash torch's thread pool. "
                f"Fix: run.threads between 1 and {limit}, or 0 for torch's default.",
            )
        )


def _too_many_updates(value: Any, updates: int, fixed: str, detail: str = "") -> Problem:
    return Problem(
        "budget.value",
        value,
        f"budget.fixed={fixed} with this value means {updates:,} updates{detail}; pilot refuses more "
        f"than {MAX_UPDATES:,} (10x the longest published pre-training schedules): a value this "
        "large is a unit mix-up. Fix: the number of " + fixed + " you mean, or budget.fixed to "
        "the quantity you typed.",
    )


# --------------------------------------------------------------------------- 3. several values
def _check_target(cfg, key: str, problems: list[Problem]) -> Any | None:
    path = select(cfg, key)
    if not path:
        problems.append(
            Problem(key, path, "missing: name the class or factory to build, e.g. pilot.models.tiny_gpt.TinyGPT.")
        )
        return None
    try:
        return import_target(path)
    except (ImportError, AttributeError) as error:
        problems.append(
            Problem(
                key,
                path,
                f"cannot be imported ({error}). Fix: give the full dotted path of an importable class or function.",
            )
        )
        return None


def _check_precision(cfg, device_type: str, problems: list[Problem]) -> None:
    dtype = enum_value(select(cfg, "precision.dtype"))
    scaler = select(cfg, "precision.grad_scaler")
    if dtype == "fp16" and not scaler:
        problems.append(
            Problem(
                "precision.grad_scaler",
                scaler,
                "fp16 needs a gradient scaler or small gradients underflow to zero. "
                "Fix: precision.grad_scaler=true, or precision=bf16.",
            )
        )
    if dtype in ("fp32", "bf16") and scaler:
        problems.append(
            Problem(
                "precision.grad_scaler",
                scaler,
                f"loss scaling is only for fp16; with {dtype} it hides nothing and "
                "changes the update. Fix: precision.grad_scaler=false.",
            )
        )
    if dtype == "bf16" and device_type == "cuda" and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
        problems.append(
            Problem("precision.dtype", dtype, "this GPU has no bf16 support. Fix: precision=fp16 or precision=fp32.")
        )


def _check_model_and_data(cfg, problems: list[Problem]) -> None:
    model_cls = _check_target(cfg, "model._target_", problems)
    data_fn = _check_target(cfg, "data._target_", problems)
    for section, target in (("model", model_cls), ("data", data_fn)):
        if target is not None:
            _check_arguments(cfg, section, target, problems)
    if (
        select(cfg, "memory.activation_checkpointing")
        and model_cls is not None
        and not getattr(model_cls, "supports_activation_checkpointing", False)
    ):
        problems.append(
            Problem(
                "memory.activation_checkpointing",
                True,
                f"{select(cfg, 'model._target_')} does not support activation "
                "checkpointing. Fix: memory=none, or a model that sets "
                "supports_activation_checkpointing = True.",
            )
        )
    head, classes = select(cfg, "model.num_classes"), select(cfg, "data.num_classes")
    if head is not None and classes is not None and head != classes:
        problems.append(
            Problem(
                "model.num_classes",
                head,
                f"the head has {head} outputs but data.num_classes={classes}: the "
                "loss would still compute while training the wrong task. "
                f"Fix: model.num_classes={classes}.",
            )
        )
    model_len, data_len = select(cfg, "model.max_len"), select(cfg, "data.max_len")
    if model_len is not None and data_len is not None and model_len < data_len:
        problems.append(
            Problem(
                "model.max_len", model_len, f"shorter than data.max_len={data_len}. Fix: model.max_len>={data_len}."
            )
        )
    model_vocab, data_vocab = select(cfg, "model.vocab_size"), select(cfg, "data.vocab_size")
    if _is_number(model_vocab) and _is_number(data_vocab) and 0 < model_vocab < data_vocab:
        problems.append(
            Problem(
                "model.vocab_size",
                model_vocab,
                f"the data has {data_vocab} token ids (data.vocab_size): larger ids would index "
                f"past the embedding. Fix: model.vocab_size={data_vocab} "
                "(conf/model/tiny_gpt.yaml takes it from the data).",
            )
        )
    model_in, data_in = select(cfg, "model.in_features"), select(cfg, "data.in_features")
    if _is_number(model_in) and _is_number(data_in) and model_in != data_in:
        problems.append(
            Problem(
                "model.in_features",
                model_in,
                f"the data's inputs have {data_in} features (data.in_features). Fix: model.in_features={data_in}.",
            )
        )
    width, heads = select(cfg, "model.d_model"), select(cfg, "model.n_head")
    if _is_number(width) and _is_number(heads) and width > 0 and heads > 0 and width % heads:
        divisors = [h for h in range(1, min(width, 64) + 1) if width % h == 0]
        problems.append(
            Problem(
                "model.n_head",
                heads,
                f"must divide model.d_model={width} (each head gets "
                f"d_model / n_head dimensions). Fix: one of {', '.join(map(str, divisors))}.",
            )
        )
    path = select(cfg, "data.path")
    if isinstance(path, str) and path and not Path(path).is_file():
        where = Path(path).resolve()
        problems.append(
            Problem(
                "data.path",
                path,
                f"{'is a directory' if where.is_dir() else 'no such file'} ({where}; relative "
                "paths start from the directory pilot runs in). Fix: the path of the JSONL "
                "file, or data.path=null for the embedded data set.",
            )
        )


def _check_devices(cfg, device_type: str, problems: list[Problem]) -> None:
    backend = enum_value(select(cfg, "distributed.backend"))
    replicas = select(cfg, "distributed.replicas") or 1
    requested = enum_value(select(cfg, "run.device"))
    if requested == "cuda" and not torch.cuda.is_available():
        problems.append(
            Problem("run.device", requested, "no CUDA device is visible. Fix: run.device=auto or run.device=cpu.")
        )
    if backend == "nccl" and device_type != "cuda":
        problems.append(
            Problem(
                "distributed.backend",
                backend,
                "NCCL needs CUDA devices. Fix: distributed.backend=gloo (or auto) on CPU.",
            )
        )
    if device_type == "cuda" and replicas > max(1, torch.cuda.device_count()):
        problems.append(
            Problem(
                "distributed.replicas",
                replicas,
                f"only {torch.cuda.device_count()} GPU(s) visible. Fix: fewer replicas, or run.device=cpu.",
            )
        )
    if device_type == "cpu" and replicas > THREADS_PER_CORE * usable_cores():
        problems.append(
            Problem(
                "distributed.replicas",
                replicas,
                f"{replicas} processes on {usable_cores()} usable CPU core(s) only wait for "
                f"each other. Fix: at most {THREADS_PER_CORE * usable_cores()} replicas on this "
                "machine, or a GPU machine.",
            )
        )


def _check_rental(cfg, problems: list[Problem]) -> None:
    from pilot.rental.catalog import catalog_problems

    rental = select(cfg, "rental")
    if rental is None:
        return
    for key, value, fix in catalog_problems(rental.catalog):
        if _finite(value) or not _is_number(value):  # nan/inf are reported once, by _check_finite
            problems.append(Problem(key, value, fix))
    names = list(rental.catalog or {})
    if rental.gpu is not None and rental.gpu not in names:
        problems.append(
            Problem(
                "rental.gpu",
                rental.gpu,
                f"not in the catalog. Fix: one of {', '.join(names)}, "
                "or add it as +rental.catalog.NAME={memory_gib: ..., fp32_tflops: ...}.",
            )
        )
    for key in ("counts", "packages_days"):
        values = list(select(cfg, f"rental.{key}") or [])
        if not values or any(v <= 0 for v in values):
            problems.append(Problem(f"rental.{key}", values, "a non-empty list of positive numbers."))


# --------------------------------------------------------------------------- 4. the data
def _check_task(cfg: DictConfig, problems: list[Problem]) -> None:
    """What needs the data: build the task once (milliseconds for the embedded instructions, a
    scikit-learn import for digits; the run builds it again) when its settings passed, then
    check the batch plan against the training split."""
    if any(p.key == "data" or p.key.startswith("data.") for p in problems):
        return  # a broken data setting would only add a second, vaguer message
    try:
        task = instantiate(cfg.data, _convert_="all")
    except InstantiationException as error:
        cause = error.__cause__ or error
        if not isinstance(cause, (PilotError, ValueError, OSError, KeyError)):
            raise  # a bug in the task's code: its traceback is the useful message
        problems.append(
            Problem(
                "data._target_",
                select(cfg, "data._target_"),
                f"building the task failed: {type(cause).__name__}: {cause}",
            )
        )
        return
    sizes = {name: len(task.splits.get(name) or []) for name in ("train", "val")}
    val, test = select(cfg, "data.split.val_fraction"), select(cfg, "data.split.test_fraction")
    if sizes["train"] == 0:
        problems.append(
            Problem(
                "data.split.val_fraction",
                val,
                f"the training split is empty (data.split.test_fraction={test}). "
                "Fix: lower val_fraction and test_fraction, or give more examples.",
            )
        )
        return
    if sizes["val"] == 0:
        problems.append(
            Problem(
                "data.split.val_fraction",
                val,
                f"the validation split is empty ({sizes['train']} training examples): every "
                "mode validates on it. Fix: raise data.split.val_fraction, e.g. 0.1.",
            )
        )
    if any(p.key.startswith(("batch.", "budget.", "distributed.replicas")) for p in problems):
        return
    _check_batch_plan(cfg, sizes["train"], problems)


def _check_batch_plan(cfg: DictConfig, train_examples: int, problems: list[Problem]) -> None:
    plan = plan_from_config(cfg, train_examples)
    per_update = (
        f"{plan.micro_batch} (batch.micro_batch) x {plan.accumulation} (batch.accumulation) x "
        f"{plan.replicas} (distributed.replicas) = {plan.examples_per_update}"
    )
    if plan.updates_per_epoch == 0:
        problems.append(
            Problem(
                "batch.micro_batch",
                plan.micro_batch,
                f"an update takes {per_update} examples but the training split has "
                f"{train_examples}, and batch.drop_last=true drops the incomplete update: an "
                f"epoch holds no update. Fix: micro_batch x accumulation x replicas <= "
                f"{train_examples}, or batch.drop_last=false.",
            )
        )
        return
    updates = plan.total_updates
    if updates == 0:
        problems.append(
            Problem(
                "budget.value",
                plan.value,
                f"budget.value={plan.value} ({plan.fixed}) buys no update: {train_examples} training "
                f"examples, {plan.examples_per_update} per update. Fix: raise budget.value, lower "
                "batch.micro_batch/accumulation, or set batch.drop_last=false.",
            )
        )
    elif updates > MAX_UPDATES and plan.fixed != "updates":  # updates: reported without the data
        problems.append(
            _too_many_updates(
                plan.value, updates, plan.fixed, f" ({train_examples} training examples, {per_update} per update)"
            )
        )


def validate(cfg: DictConfig) -> None:
    """Raise one ConfigError naming every problem; return None when the config is sound."""
    problems: list[Problem] = []
    container: Any = None
    try:
        container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as error:  # missing values, broken interpolations
        problems.append(
            Problem(getattr(error, "full_key", None) or "?", "???", f"{type(error).__name__}: {error}".splitlines()[0])
        )
    device_type = (
        resolve_device(cfg).type
        if enum_value(select(cfg, "run.device")) != "cuda" or torch.cuda.is_available()
        else "cpu"
    )
    _check_unknown_keys(cfg, "", problems)
    if container is not None:
        _check_finite(container, "", problems)
    _check_ranges(cfg, problems)
    _check_special_numbers(cfg, problems)
    _check_precision(cfg, device_type, problems)
    _check_model_and_data(cfg, problems)
    _check_devices(cfg, device_type, problems)
    _check_rental(cfg, problems)
    if container is not None:  # the task's settings resolve
        _check_task(cfg, problems)
    if problems:
        raise ConfigError(problems)
