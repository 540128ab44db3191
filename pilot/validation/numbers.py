"""Numbers: nan or inf anywhere, and the settings whose bound needs a reason of its own or another
value (the plain ranges are in ``pilot.validation.ranges``)."""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig, ListConfig

from pilot.config.values import enum_value, select
from pilot.cpu_budget import affinity_cores
from pilot.validation.problems import Problem, is_finite, is_number

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
# what turns a check off, for the message when someone writes nan or inf instead
OFF_VALUES = {
    "loop.divergence_factor": "0 turns the divergence rule off",
    "optim.grad_clip": "0 disables clipping",
    "campaign.quality_tolerance": "null skips the quality check",
}


def check_finite(value: Any, key: str, problems: list[Problem]) -> None:
    """nan or inf is never a meaningful setting: every comparison with nan is false, so it would
    pass a range check and reach the optimizer, the scaler or a tolerance."""
    if isinstance(value, dict):
        for name, child in value.items():
            check_finite(child, f"{key}.{name}" if key else str(name), problems)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            check_finite(child, f"{key}[{index}]", problems)
    elif is_number(value) and not math.isfinite(value):
        hint = f" ({OFF_VALUES[key]})" if key in OFF_VALUES else ""
        problems.append(Problem(key, value, f"not a finite number. Fix: a finite value{hint}."))


def _check_seed(cfg: DictConfig, problems: list[Problem]) -> None:
    seed = select(cfg, "seed")
    if is_number(seed) and not 0 <= seed <= MAX_SEED:
        problems.append(
            Problem(
                "seed",
                seed,
                f"must lie in [0, {MAX_SEED}]: numpy's seeding refuses anything else. Fix: a seed such as 0, 1, 2.",
            )
        )


def _check_lr_and_weight_decay(cfg: DictConfig, problems: list[Problem]) -> None:
    lr = select(cfg, "optim.lr")
    if is_finite(lr) and lr < 0:
        problems.append(
            Problem(
                "optim.lr",
                lr,
                "must be >= 0: a negative lr climbs the loss. Fix: the peak lr, e.g. 1e-3 for AdamW or 0.1 for SGD.",
            )
        )
    elif is_finite(lr) and lr > MAX_PEAK_LR:
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
    if is_finite(lr) and is_finite(decay) and lr * decay >= 1:
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


def _check_betas(cfg: DictConfig, problems: list[Problem]) -> None:
    betas = select(cfg, "optim.betas")
    if betas is not None:
        values = list(betas) if isinstance(betas, (list, tuple, ListConfig)) else [betas]  # ${optim.lr}: one number
        numbers = all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in values)
        if len(values) != 2 or not numbers or not all(0 <= b < 1 for b in values if is_finite(b)):
            problems.append(
                Problem(
                    "optim.betas", values, "two moment decay rates, each in [0, 1). Fix: e.g. optim.betas=[0.9,0.95]."
                )
            )


def _check_divergence_factor(cfg: DictConfig, problems: list[Problem]) -> None:
    factor = select(cfg, "loop.divergence_factor")
    if is_finite(factor) and factor != 0 and factor <= 1:
        problems.append(
            Problem(
                "loop.divergence_factor",
                factor,
                "must be > 1, or 0 to turn the rule off: a run is diverged when its loss "
                "exceeds factor x the first update's loss, so a factor <= 1 stops an ordinary "
                "run at its first noisy update. Fix: e.g. 4.0.",
            )
        )


def _check_early_stopping(cfg: DictConfig, problems: list[Problem]) -> None:
    """Early stopping counts validation points without improvement: with none, it can never act."""
    patience, every = select(cfg, "loop.early_stop_patience"), select(cfg, "loop.eval_every")
    if is_finite(patience) and patience > 0 and every == 0:
        problems.append(
            Problem(
                "loop.early_stop_patience",
                patience,
                "counts validation points without improvement, but loop.eval_every=0 makes none before the "
                "end: the rule can never stop the run. Fix: loop.eval_every=<updates between points> (e.g. 50), "
                "or loop.early_stop_patience=0.",
            )
        )


def _check_resume_check(cfg: DictConfig, problems: list[Problem]) -> None:
    before, total = select(cfg, "pilot.resume_check.updates_before"), select(cfg, "pilot.resume_check.updates_total")
    if is_number(before) and is_number(total) and 0 < before and not before < total:
        problems.append(
            Problem(
                "pilot.resume_check.updates_before",
                before,
                f"must be below pilot.resume_check.updates_total={total}: the check resumes "
                f"after k updates and continues to n. Fix: e.g. pilot.resume_check.updates_before="
                f"{max(1, total // 2)}, or pilot.resume_check.updates_total={before * 2}.",
            )
        )


def _check_budget_updates(cfg: DictConfig, problems: list[Problem]) -> None:
    """budget.fixed=updates: the value is the number of updates (the other kinds need the data)."""
    fixed, value = enum_value(select(cfg, "budget.fixed")), select(cfg, "budget.value")
    if fixed == "updates" and is_number(value) and value > MAX_UPDATES:
        problems.append(too_many_updates(value, value, "updates"))


def _check_split_fractions(cfg: DictConfig, problems: list[Problem]) -> None:
    val, test = select(cfg, "data.split.val_fraction"), select(cfg, "data.split.test_fraction")
    if is_finite(val) and is_finite(test) and val + test >= 1.0:
        problems.append(
            Problem(
                "data.split.val_fraction",
                val,
                f"with data.split.test_fraction={test} nothing is left to train on. "
                "Fix: keep val_fraction + test_fraction below 1.",
            )
        )


def _check_threads(cfg: DictConfig, problems: list[Problem]) -> None:
    threads, cores = select(cfg, "run.threads"), affinity_cores()
    limit = THREADS_PER_CORE * cores
    if is_number(threads) and threads < 0:
        problems.append(
            Problem(
                "run.threads",
                threads,
                "must be >= 0. Fix: run.threads=0 (the usable CPUs divided by the replicas) or a count of threads, e.g. run.threads=2.",
            )
        )
    elif is_number(threads) and threads > limit:
        problems.append(
            Problem(
                "run.threads",
                threads,
                f"this process may use {cores} CPU core(s); more than {THREADS_PER_CORE} threads "
                "per core only oversubscribe them, and far more crash torch's thread pool. "
                f"Fix: run.threads between 1 and {limit}, or 0 to let pilot divide the usable CPUs among the replicas.",
            )
        )


def check_special_numbers(cfg: DictConfig, problems: list[Problem]) -> None:
    """Numbers whose bound needs a reason of its own, or another value."""
    for check in (
        _check_seed,
        _check_lr_and_weight_decay,
        _check_betas,
        _check_threads,
        _check_divergence_factor,
        _check_early_stopping,
        _check_resume_check,
        _check_budget_updates,
        _check_split_fractions,
    ):
        check(cfg, problems)


def too_many_updates(value: Any, updates: int, fixed: str, detail: str = "") -> Problem:
    return Problem(
        "budget.value",
        value,
        f"budget.fixed={fixed} with this value means {updates:,} updates{detail}; pilot refuses more "
        f"than {MAX_UPDATES:,} (10x the longest published pre-training schedules): a value this "
        "large is a unit mix-up. Fix: the number of " + fixed + " you mean, or budget.fixed to "
        "the quantity you typed.",
    )
