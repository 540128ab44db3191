"""Settings a command line gives that this run will not read: accepted (a sweep may set them for some of
its jobs, a plug-in may share a line between optimizers), but said once per run as a warning, so that a
value the user meant to matter is not taken as tested (``optim.momentum=0.9`` with AdamW trained without
momentum, exit 0 and nothing said)."""

from __future__ import annotations

from omegaconf import DictConfig

from pilot.config.values import enum_value, reads_estimate_settings, select

TRAINING_ONLY = ("loop.", "checkpoint.", "closing.")  # mode=estimate trains nothing: these are not read,
PLANNED = ("loop.eval_examples", "loop.eval_every")  # but for the campaign plan's validation times


def unread_settings(cfg: DictConfig, overrides: list[str], choices: dict | None = None) -> list[str]:
    """One line per setting of ``overrides`` (as typed) that this config does not read, with why;
    ``choices``: Hydra's group choices (``optim``: the group the optimizer's settings come from)."""
    given = {o.split("=", 1)[0].lstrip("+~"): o for o in overrides if "=" in o and not o.startswith("hydra")}
    name, schedule = enum_value(select(cfg, "optim.name")), enum_value(select(cfg, "optim.schedule"))
    mode = enum_value(select(cfg, "mode"))
    lines = []
    if "optim.momentum" in given and name != "sgd":
        lines.append(f"{given['optim.momentum']}: only SGD reads it (optim.name={name}). Fix: optim=sgd")
    if "optim.betas" in given and name == "sgd":
        lines.append(f"{given['optim.betas']}: only AdamW reads them (optim.name=sgd). Fix: optim=adamw")
    if "optim.min_lr_ratio" in given and schedule == "constant":
        lines.append(f"{given['optim.min_lr_ratio']}: a constant schedule does not read it. Fix: optim.schedule=cosine")
    group = str((choices or {}).get("optim") or "adamw")
    if "optim.name" in given and name != group:
        kept = [k for k in ("optim.lr", "optim.weight_decay") if k not in given]
        shown = ", ".join(f"{k}={select(cfg, k)}" for k in kept)
        lines.append(
            f"{given['optim.name']}: the optimizer changes but the optim group is still {group}"
            + (f" ({shown}: its values, tuned for {group})" if shown else "")
            + f". Fix: optim={name} (the group: its own defaults), then override what you mean"
        )
    resumes = bool(select(cfg, "checkpoint.resume"))
    for key in ("checkpoint.force_resume", "checkpoint.continue_diverged"):
        if key in given and not resumes and bool(select(cfg, key)):
            lines.append(f"{given[key]}: checkpoint.resume=false starts afresh, so nothing is resumed. Fix: drop one")
    if mode == "estimate":
        lines += [
            f"{o}: mode=estimate trains nothing and does not read it"
            for k, o in given.items()
            if k.startswith(TRAINING_ONLY) and k not in PLANNED
        ]
    lines += _unread_groups(cfg, given, mode)
    strategy, replicas = enum_value(select(cfg, "distributed.strategy")), select(cfg, "distributed.replicas")
    if (
        mode != "estimate"
        and strategy == "fsdp"
        and replicas == 1  # 0 or none: its own refusal says it
        and ("distributed" in given or "distributed.strategy" in given)
    ):
        lines.append(
            "distributed.strategy=fsdp with distributed.replicas=1: one rank shards nothing (the run is a single "
            "process). Fix: distributed.replicas=2 or more"
        )
    return lines


PILOT_READ_BY_ESTIMATE = ("pilot.steady_steps",)  # the estimate times updates from a pilot's steady_steps phase


def _unread_groups(cfg: DictConfig, given: dict[str, str], mode: str) -> list[str]:
    """``pilot.*`` outside a pilot (mode=train runs none of its checks), ``rental.*`` and ``estimate.*`` in
    ``mode=train``, ``distributed.fsdp.*`` in a run that does not shard (the estimate reads them for its sheet's
    sharded rows)."""
    lines = []
    for key, typed in given.items():
        if key.startswith("pilot.") and mode == "train":
            lines.append(f"{typed}: mode=train runs none of the pilot's checks and does not read it. Fix: mode=pilot")
        elif key.startswith("pilot.") and mode == "estimate" and key not in PILOT_READ_BY_ESTIMATE:
            lines.append(
                f"{typed}: mode=estimate runs none of the pilot's checks and does not read it. Fix: mode=pilot"
            )
    for key, typed in given.items():  # mode=train makes no choice sheet, and no estimate unless in_runs
        if mode == "train" and key.startswith("rental."):
            lines.append(f"{typed}: mode=train makes no choice sheet and does not read it. Fix: mode=estimate")
        elif key.startswith("estimate.") and key != "estimate.in_runs" and not reads_estimate_settings(cfg):
            lines.append(
                f"{typed}: mode=train makes no memory estimate (estimate.in_runs=false) and does not read it. "
                "Fix: mode=estimate, or estimate.in_runs=true"
            )
    strategy = enum_value(select(cfg, "distributed.strategy"))
    if mode != "estimate" and strategy != "fsdp":
        lines += [
            f"{typed}: only FSDP reads it (distributed.strategy={strategy}). Fix: distributed=fsdp"
            for key, typed in given.items()
            if key.startswith("distributed.fsdp.")
        ]
    return lines


def unread_hydra_settings(hydra_overrides: list[str], multirun: bool) -> list[str]:
    """Hydra's directory of the other kind of launch: ``hydra.sweep.dir`` without -m (the one run writes into
    hydra.run.dir), ``hydra.run.dir`` with -m (the jobs go under hydra.sweep.dir)."""
    given = {o.split("=", 1)[0].lstrip("+~"): o for o in hydra_overrides if "=" in o}
    if not multirun and "hydra.sweep.dir" in given:
        return [
            f"{given['hydra.sweep.dir']}: only a sweep (-m) reads it; this one run writes into hydra.run.dir. Fix: add -m, or hydra.run.dir=<directory>"
        ]
    if multirun and "hydra.run.dir" in given:
        return [
            f"{given['hydra.run.dir']}: a sweep (-m) does not read it; its jobs go under hydra.sweep.dir. Fix: hydra.sweep.dir=<directory>"
        ]
    return []
