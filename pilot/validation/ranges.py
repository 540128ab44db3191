"""The allowed range of every numeric setting (``RANGES``) and the check that applies it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from omegaconf import DictConfig

from pilot.config.values import enum_value, reads_estimate_settings, select
from pilot.phases.gates import PHASES
from pilot.validation.problems import Problem, is_number
from pilot.validation.unread import PILOT_READ_BY_ESTIMATE


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
EXAMPLES = Range(0, 2**31 - 1, low_open=True)  # a count of examples PyTorch's tensors and samplers can index
BEYOND_ANY_SPLIT = "past 2**31 - 1 more than any split holds, and a batch holds its split at most"
EXAMPLES_WHY, MICRO_BATCHES_WHY = (
    f"a count of examples: {BEYOND_ANY_SPLIT}",
    f"a count of micro-batches: {BEYOND_ANY_SPLIT}",
)

# Every numeric setting: (key, allowed range, why or what a boundary value means).
# model.* and data.* are checked by name, so they hold for any model or task using the name.
# Settings with a rule of their own (optim.lr, optim.betas, run.threads, seed,
# loop.divergence_factor, the budget) are in pilot.validation.numbers.
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
    ("adapter.r", POSITIVE, "the rank of each low-rank update"),
    ("adapter.lora_alpha", POSITIVE, "the update is scaled by lora_alpha / r"),
    ("adapter.lora_dropout", BELOW_ONE, "a probability on the adapter's input (0 keeps runs reproducible)"),
    ("data.max_len", SEQUENCE, "a sequence needs one token to predict from and one to predict"),
    ("data.vocab_size", POSITIVE, ""),
    ("data.in_features", POSITIVE, ""),
    ("data.num_classes", TWO_CLASSES, "one class leaves nothing to learn"),
    ("data.split.val_fraction", BELOW_ONE, ""),
    ("data.split.test_fraction", BELOW_ONE, ""),
    ("precision.init_scale", POSITIVE, "the first loss scale of the gradient scaler, e.g. 65536"),
    ("batch.micro_batch", EXAMPLES, EXAMPLES_WHY),
    ("batch.accumulation", EXAMPLES, MICRO_BATCHES_WHY),
    ("batch.eval_micro_batch", EXAMPLES, EXAMPLES_WHY),
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
    (
        "estimate.tolerance",
        Range(0, 1, low_open=True),
        "a share of the measurement, e.g. 0.10 for 10%, not a percentage",
    ),
    (
        "rental.margin",
        SHARE,
        "a share of the estimated peak added to it, e.g. 0.10 for 10%, not a percentage: 5 would rent 6x the memory",
    ),
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
    (
        "pilot.tiny.examples",
        Range(1, 256),
        "a handful of training examples the loop must learn: each of its updates sees them all, so thousands "
        "make the pilot train for minutes (the check is of the mechanism, not of the data set)",
    ),
    ("pilot.tiny.max_updates", POSITIVE, ""),
    ("pilot.tiny.max_updates_if_falling", POSITIVE, ""),
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


# settings with a few allowed words (where the schema types them as str: they are passed on to a library)
CHOICES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("adapter.bias", ("none", "all", "lora_only"), "which biases train; none keeps them frozen"),
    ("pilot.oom_in_phase", PHASES, "the testing aid raises out-of-memory in this phase of the pilot"),
)


def check_ranges(cfg: DictConfig, problems: list[Problem]) -> None:
    """Every setting's range, but the pilot's own outside a pilot: mode=train and mode=estimate do not read
    them (said as a warning, ``unread_settings``), so refusing one would contradict that line."""
    unread = _settings_unread(cfg)
    for key, words, why in CHOICES:
        value = select(cfg, key)
        if value is not None and value not in words and not unread(key):
            problems.append(Problem(key, value, f"must be one of {', '.join(words)} ({why})."))
    for key, allowed, why in RANGES:
        if unread(key):
            continue
        value = select(cfg, key)
        if value is None or (is_number(value) and not math.isfinite(value)):
            continue  # unset, or already reported as not finite
        if not is_number(value):
            problems.append(Problem(key, value, f"must be a number; it must {allowed}."))
        elif value not in allowed:
            fix = _fix(key, _left_by_the_other_split(cfg, key) or allowed, value)
            problems.append(Problem(key, value, f"must {allowed}" + (f" ({why})." if why else ".") + fix))


def _settings_unread(cfg: DictConfig):
    """Whether a key is one of the settings this run's mode does not read (``unread_settings``): the pilot's
    outside a pilot, the estimate's and the rental's in ``mode=train`` (no estimate, no choice sheet)."""
    mode = enum_value(select(cfg, "mode"))
    estimates = reads_estimate_settings(cfg)
    return lambda key: (
        (key.startswith("pilot.") and mode != "pilot" and (mode != "estimate" or key not in PILOT_READ_BY_ESTIMATE))
        or (mode == "train" and key.startswith("rental."))
        or (not estimates and key.startswith("estimate.") and key != "estimate.in_runs")
    )


SPLIT_FRACTIONS = ("data.split.val_fraction", "data.split.test_fraction")


def _left_by_the_other_split(cfg: DictConfig, key: str) -> Range | None:
    """A split's fraction takes what the other leaves (val + test < 1): val_fraction=1.5 was told "e.g. 0.9",
    which the default test_fraction=0.1 then refused as leaving nothing to train on."""
    if key not in SPLIT_FRACTIONS:
        return None
    other = select(cfg, SPLIT_FRACTIONS[1 - SPLIT_FRACTIONS.index(key)])
    if not is_number(other) or not 0 <= other < 1:
        return None
    return Range(0, 1 - other, high_open=True)


def _fix(key: str, allowed: Range, value: object) -> str:
    """' Fix: e.g. key=<a value in range>': the value without its sign, a percentage as a share, the bound
    it crossed (a value just inside an open one); '' where none of those is in range."""
    if not is_number(value) or isinstance(value, bool):
        return ""
    whole = float(value).is_integer()
    first = [abs(value)]  # a sign typed by mistake
    if allowed.high is not None and allowed.high <= 1 < value <= 100 and whole:  # a percentage (15) for a share
        first.append(value / 100)
    bounds = []  # else the nearest bound, just inside an open one
    if allowed.low is not None:  # a share's open 0 steps by 0.1 (rental.utilisation=0 was offered 1: 100% of peak)
        step = 1 if whole and (allowed.high is None or allowed.high > 1) else 0.1
        bounds.append(allowed.low + step * allowed.low_open)
    if allowed.high is not None:
        bounds.append(allowed.high - (1 if whole and allowed.high > 1 else 0.1) * allowed.high_open)
    for candidate in first + sorted(bounds, key=lambda bound: abs(bound - value)):
        if candidate != value and candidate in allowed:
            shown = int(candidate) if whole and float(candidate).is_integer() else round(candidate, 6)
            read_as = f" ({value:g} read as a percentage)" if candidate == value / 100 else ""
            return f" Fix: e.g. {key}={shown}{read_as}."
    return ""
