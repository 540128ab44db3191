"""What needs the data: the task's splits, and the batch plan against the training split (a
micro-batch larger than the split, a budget that buys no update or an absurd number of them)."""

from __future__ import annotations

import re

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig

from pilot.config.values import enum_value, select, written_overrides
from pilot.engine.batch_plan import plan_from_config
from pilot.errors import PilotError
from pilot.validation.numbers import MAX_UPDATES, too_many_updates
from pilot.validation.problems import Problem


def _not_built(cfg: DictConfig, cause: Exception) -> Problem:
    """Why the task could not be built, under the key the builder's message names (``data.vocab_size=300 but
    ...``: that key leads) or, for a message naming none, under ``data._target_``."""
    named = re.match(r"(data(?:\.\w+)+)=", str(cause))
    if isinstance(cause, PilotError) or named:  # the builder's own message names its key, value and fix
        key = named.group(1) if named else "data._target_"
        return Problem(key, select(cfg, key), str(cause), said=True)
    return Problem(
        "data._target_", select(cfg, "data._target_"), f"building the task failed: {type(cause).__name__}: {cause}"
    )


def check_task(cfg: DictConfig, problems: list[Problem]) -> None:
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
        problems.append(_not_built(cfg, cause))
        return
    sizes = {name: len(task.splits.get(name) or []) for name in ("train", "val")}
    val, test = select(cfg, "data.split.val_fraction"), select(cfg, "data.split.test_fraction")
    if not any(task.splits.values()):  # no example in any split: the data's settings, not the fractions
        problems.append(_no_example(cfg))
        return
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
        by = enum_value(select(cfg, "data.split.by"))
        groups = len({e.group for e in task.splits["train"]}) if by == "group" else None
        problems.append(
            Problem(
                "data.split.val_fraction",
                val,
                f"the validation split is empty ({sizes['train']} training examples"
                + (
                    f" in {groups} group(s): data.split.by=group keeps a group in one split, so with "
                    f"{groups} group(s) no share of them makes a validation split). Fix: give the examples more "
                    "groups (documents, users: what must not be split; an example with a group of its own when "
                    "no two belong together), or data.split.by=time for time-stamped examples"
                    if groups is not None and 0 < float(val or 0) and groups * float(val or 0) < 1  # 0 asks for none
                    else "): every mode validates on it. Fix: raise data.split.val_fraction"
                    + ("." if float(val or 0) >= 0.1 else ", e.g. 0.1.")
                ),
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
            too_many_updates(
                plan.value, updates, plan.fixed, f" ({train_examples} training examples, {per_update} per update)"
            )
        )


def _no_example(cfg: DictConfig) -> Problem:
    """The task built no example at all, named by the data settings this command line gives."""
    given = [o.lstrip("+~") for o in written_overrides() if o.lstrip("+~").startswith("data.")]
    return Problem(
        "data._target_",
        select(cfg, "data._target_"),
        "built a task without a single example (every split empty)"
        + (f" with {', '.join(given)}" if given else "")
        + ". Fix: data settings that give examples"
        + (f" (check {given[0].partition('=')[0]})" if len(given) == 1 else ""),
    )
