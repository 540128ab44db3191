"""Step 3: can the loop learn a handful of examples? The mechanism, not generalisation.

Train on K training examples (every update sees all of them) for at most M
updates with the run's model, optimizer, learning rate and precision. Pass
when every loss and gradient norm is finite, the loss falls by the declared
factor, and the declared share of examples has its targets predicted exactly
(every answer token for generation, the class id for classification). A
label pipeline that scrambles labels, or a learning rate of zero, fails.

What "recovered" can mean depends on the subset (``SubsetScorer``), and the check says which
rule it used:
- ``every target``: each target's context (the tokens before it; a classification example's
  input) fixes its answer within the subset, so a perfect learner predicts every one;
- ``determined positions``: some contexts occur with different next tokens (plain language
  modelling: eight texts starting alike), so an example counts as recovered when every target
  whose context *is* unique in its answer is predicted; the loss drop is measured above the
  subset's loss floor (the conditional entropy of those ambiguous targets), not above zero;
- ``the task's correct_count``: the task's own notion of correct (``TaskData.correct_count``),
  as the share of targets it counts correct.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pilot.checks.collated import collate_is_random
from pilot.checks.frozen_tensors import FROZEN_ON_PATH
from pilot.checks.learning_hints import (
    FROZEN_OUTPUT,
    learning_hints,
    unmoved_hint,
    unreached_tensors,
    untrained_tensors,
    warmup_hint,
    weights_fingerprint,
)
from pilot.checks.loss_floor import loss_floor
from pilot.checks.result import CheckResult
from pilot.checks.subset_scorer import SubsetScorer
from pilot.checks.tiny_subset_reasons import below_zero, cannot_fall, random_targets, slow_drop, zero_floored
from pilot.data.task import TaskData, move_to
from pilot.engine.build import build_model as build_fresh_model
from pilot.engine.forward import forward_loss
from pilot.engine.rounded_updates import half_weights_hint
from pilot.engine.trainer import Trainer
from pilot.models.adapter import adapter_rate_hint, frozen_head_hint, scaled_logits_hint

log = logging.getLogger(__name__)

STUCK = 0.02  # a loss whose own floor is within 2% of where it starts cannot fall: the targets do not reach it
BELOW_ZERO = 1e-4  # a final loss below -1e-4 x the initial one is below 0; closer: float rounding
NO_FLOOR = 0.01  # a loss's own floor below 1% of where it starts is 0 (Adam on free logits stops near 1e-4)
STEP = "tiny_subset"


def tiny_config(cfg: DictConfig, n_examples: int, max_updates: int) -> DictConfig:
    tiny = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    micro = min(int(cfg.batch.micro_batch), n_examples)
    tiny.batch.micro_batch = micro
    tiny.batch.accumulation = -(-n_examples // micro)  # one update = the whole subset
    tiny.batch.drop_last = False
    tiny.budget.fixed, tiny.budget.value = "updates", max_updates
    tiny.distributed.replicas = 1
    return tiny


def _subset(task: TaskData, examples: int, seed: int) -> list:
    """The training examples the check learns: ``examples`` of them, drawn by the seed, in split order."""
    order = np.random.default_rng([seed, 7]).permutation(len(task.splits["train"]))
    return [task.splits["train"][i] for i in sorted(order[: min(examples, len(order))])]


@dataclass
class _Attempt:
    """One training of the subset from a fresh model: where its loss started and ended, its recovery, and
    the loss at every scoring (``curve``: (update, loss))."""

    trainer: Trainer
    model: torch.nn.Module
    scorer: SubsetScorer
    initial_loss: float
    final_loss: float
    recovery: float
    finite: bool
    loss_target: float
    curve: list[tuple[int, float]]
    weights_before: list[tuple[float, float]]  # ``weights_fingerprint`` of the model before training

    def passed(self, min_recovery: float) -> bool:
        return self.finite and self.final_loss <= self.loss_target and self.recovery >= min_recovery


def _attempt(cfg: DictConfig, tiny_task: TaskData, device, build_model, max_updates: int) -> _Attempt:
    """Train a fresh model on the subset for at most ``max_updates`` (the schedule spans them), scoring it
    every ``check_every`` updates and stopping once it passes."""
    settings = cfg.pilot.tiny
    model = build_model() if build_model is not None else build_fresh_model(cfg)
    trainer = Trainer(tiny_config(cfg, len(tiny_task.splits["train"]), max_updates), tiny_task, model, device)
    scorer = SubsetScorer(tiny_task, trainer.train_items, int(cfg.batch.eval_micro_batch), trainer.raw_model)
    weights_before = weights_fingerprint(trainer.raw_model)
    initial_loss, recovery = scorer.score(trainer)
    loss_target = scorer.loss_floor + (initial_loss - scorer.loss_floor) / float(settings.loss_drop)
    final_loss, finite, curve = initial_loss, True, [(0, initial_loss)]
    while trainer.updates_done < trainer.plan.total_updates:
        record = trainer.train_step()
        # fp16's scaler skipping a step on an overflowed gradient is its normal working, not a non-finite run
        if not math.isfinite(record.loss) or not (math.isfinite(record.grad_norm) or record.step_skipped):
            finite, final_loss = False, record.loss  # the update's own loss: the last scoring's would say more
            break
        if trainer.updates_done % int(settings.check_every) == 0 or trainer.updates_done == trainer.plan.total_updates:
            final_loss, recovery = scorer.score(trainer)
            curve.append((trainer.updates_done, final_loss))
            if final_loss <= loss_target and recovery >= float(settings.min_recovery):
                break
    return _Attempt(
        trainer, model, scorer, initial_loss, final_loss, recovery, finite, loss_target, curve, weights_before
    )


def still_falling(curve: list[tuple[int, float]], floor: float) -> str:
    """Where the loss still fell at the end of an attempt, steadily: its distance to ``floor`` down by at
    least a tenth over each third of the attempt, the last one included (a decaying schedule slows it
    there; a plateau or a rise does not count), as "0.31 -> 0.18 over the last 100 updates"; else ""."""
    last = curve[-1][0]
    if last < 3:
        return ""
    at = [min(curve, key=lambda point: abs(point[0] - last * k / 3)) for k in range(4)]
    distances = [loss - floor for _, loss in at]
    steady = all(later <= 0.9 * earlier for earlier, later in zip(distances, distances[1:]))
    (start, at_start), (_, at_end) = at[2], at[3]
    return f"{at_start:.3g} -> {at_end:.3g} over the last {last - start} updates" if steady and start < last else ""


def _stretched_if_falling(cfg: DictConfig, tiny_task: TaskData, device, build_model) -> tuple[_Attempt, str]:
    """The attempt over ``max_updates``; where it did not pass while its loss still fell steadily, again
    from scratch with the schedule over ``max_updates_if_falling``, judged whether it passes or not (a
    second attempt that failed too was left out of the verdict and the record), with what to say."""
    settings = cfg.pilot.tiny
    attempt = _attempt(cfg, tiny_task, device, build_model, int(settings.max_updates))
    longer, shorter = int(settings.max_updates_if_falling), int(settings.max_updates)
    if attempt.passed(float(settings.min_recovery)) or not attempt.finite or longer <= shorter:
        return attempt, ""
    falling = still_falling(attempt.curve, attempt.scorer.loss_floor)
    if not falling and _learning_on_random_draws(attempt, cfg):  # its loss too noisy to fall steadily
        start, end = attempt.curve[0][1], attempt.final_loss
        falling = f"{start:.3g} -> {end:.3g}, a collate that draws at random"
    if not falling:
        return attempt, ""
    log.info(  # the second attempt can take minutes: say why nothing else shows meanwhile
        "tiny_subset: not learnt in pilot.tiny.max_updates=%d but its loss still falls (%s): again from scratch "
        "with the schedule over pilot.tiny.max_updates_if_falling=%d",
        shorter,
        falling,
        longer,
    )
    again = _attempt(cfg, tiny_task, device, build_model, longer)
    if not again.passed(float(settings.min_recovery)):  # the last attempt is the one judged, the first said
        return again, (
            f", again from scratch with the schedule over pilot.tiny.max_updates_if_falling={longer}: at "
            f"pilot.tiny.max_updates={shorter} it had not learnt either, its loss still falling ({falling})"
        )
    return again, (
        f"; within pilot.tiny.max_updates_if_falling={longer}, the schedule stretched over them: at "
        f"pilot.tiny.max_updates={shorter} it had not, its loss still falling ({falling})"
    )


def _drop_said(floor: float, above: float, drop: float) -> str:
    if above <= 0:  # no ratio to give: the loss reached what it falls towards
        return f"at or below its floor {floor:.3g}"
    return f"its distance to the floor {floor:.3g} down {drop:.3g}x" if floor > 0 else f"{drop:.3g}x"


def tiny_subset_check(
    cfg: DictConfig, task: TaskData, device: torch.device, build_model: Callable[[], torch.nn.Module] | None = None
) -> CheckResult:
    settings = cfg.pilot.tiny
    subset = _subset(task, int(settings.examples), int(cfg.seed))
    n_examples = len(subset)
    tiny_task = replace(task, splits={"train": subset, "val": subset, "test": []})
    min_recovery = float(settings.min_recovery)
    attempt, longer = _stretched_if_falling(cfg, tiny_task, device, build_model)
    trainer, model, scorer = attempt.trainer, attempt.model, attempt.scorer
    floor, loss_target = scorer.loss_floor, attempt.loss_target
    initial_loss, final_loss = attempt.initial_loss, attempt.final_loss
    recovery, finite = attempt.recovery, attempt.finite
    below = NO_FLOOR * initial_loss  # an own floor under it is none
    own_floor = _loss_own_floor(tiny_task, trainer, scorer, below) if final_loss > loss_target else None
    if own_floor is not None and own_floor > max(floor, below):  # not the optimiser's rest
        floor, loss_target = own_floor, own_floor + (initial_loss - own_floor) / float(settings.loss_drop)
    above = final_loss - floor
    drop = (initial_loss - floor) / above if above > 0 else math.inf
    details = {
        "examples": n_examples,
        "updates": trainer.updates_done,
        "initial_loss": initial_loss,
        "final_loss": final_loss,
        "loss_floor": floor,
        "loss_own_floor": own_floor,
        "loss_drop": drop,
        "declared_loss_drop": float(settings.loss_drop),
        "recovered": recovery,
        "declared_recovery": min_recovery,
        "all_finite": finite,
        "recovery_rule": scorer.rule,
        "example_indices": [e.index for e in subset],
        "stretched_schedule": bool(longer),
    }
    numbers = (
        f"loss {initial_loss:.3g} -> {final_loss:.3g} ({_drop_said(floor, above, drop)}, declared "
        f">= {float(settings.loss_drop):g}x), {recovery:.0%} of {n_examples} examples recovered "
        f"{scorer.recovered_as} (declared >= {min_recovery:.0%}; rule: {scorer.rule}) after "
        f"{trainer.updates_done} updates{longer}"
    )
    if not finite:
        return CheckResult(STEP, "fail", f"non-finite loss or gradient at update {trainer.updates_done}", [], details)
    below = final_loss < -BELOW_ZERO * abs(initial_loss) and initial_loss >= 0  # not a rounding's -1e-8 (1 - cos)
    if below and recovery < min_recovery and zero_floored(task, scorer):
        return CheckResult(STEP, "fail", below_zero(numbers), [], details)
    if _scoring_at_fault(scorer, recovery < min_recovery, final_loss, loss_target):
        return CheckResult(STEP, "fail", _scoring_disagrees(scorer, numbers, model, device), [], details)
    if final_loss <= loss_target and recovery >= min_recovery:
        still = _learnt_without(cfg, tiny_task, attempt, device)
        return CheckResult(STEP, "warn" if still else "pass", "learns the subset: " + numbers + still, [], details)
    if recovery < min_recovery and own_floor is not None and initial_loss - own_floor <= STUCK * initial_loss:
        return CheckResult(STEP, "fail", cannot_fall(numbers, own_floor, initial_loss, STUCK), [], details)
    verdict, reason = _not_learnt(cfg, tiny_task, attempt, device, numbers, recovery)
    details["collate_random"] = collate_is_random(tiny_task, trainer.train_items[: int(cfg.batch.micro_batch)])
    if verdict == "fail" and details["collate_random"] and drop >= RANDOM_COLLATE_DROP:
        verdict, reason = "warn", reason.replace("cannot learn the subset:", "not learnt in time:", 1)
        reason += random_targets(drop)
    return CheckResult(STEP, verdict, reason, [], details)


def _learnt_without(cfg: DictConfig, tiny_task: TaskData, attempt: _Attempt, device: torch.device) -> str:
    """The trainable tensors the subset was learnt without (``learning_hints.untrained_tensors``), or ""."""
    trainer = attempt.trainer
    batch = move_to(tiny_task.collate(trainer.train_items[: int(cfg.batch.micro_batch)]), device)
    unreached = unreached_tensors(tiny_task, trainer.raw_model, batch)
    return untrained_tensors(attempt.weights_before, trainer.raw_model, unreached)


def _learning_on_random_draws(attempt: _Attempt, cfg: DictConfig) -> bool:
    """A random collate (masks, crops drawn per call) whose subset's loss fell ``RANDOM_COLLATE_DROP`` times."""
    floor = attempt.scorer.loss_floor
    above = attempt.final_loss - floor
    drop = (attempt.initial_loss - floor) / above if above > 0 else math.inf
    items = attempt.trainer.train_items[: int(cfg.batch.micro_batch)]
    return drop >= RANDOM_COLLATE_DROP and collate_is_random(attempt.trainer.task, items)


RANDOM_COLLATE_DROP = 1.5  # a random collate's subset, its loss down this many times: learning, slower (a loop that
# cannot learn — no learning rate, labels shuffled apart from their inputs — stays within about 1.1x)


def _not_learnt(
    cfg: DictConfig, task: TaskData, attempt: _Attempt, device: torch.device, numbers: str, recovery: float
) -> tuple[str, str]:
    """Every example recovered (the mechanism works): warn, naming why the loss stays up where a hint
    does; else fail, with what the model shows (training that changed no weight: that alone)."""
    model, scorer = attempt.model, attempt.scorer
    settings = cfg.pilot.tiny
    learnt = recovery >= float(settings.min_recovery)
    found = learning_hints(task, model, scorer.batches[0], device, learnt)
    hints = found if FROZEN_OUTPUT in found else _model_hints(model, cfg) + found  # a frozen head first
    if learnt:
        said = f"recovers the subset, but its loss fell less than declared: {numbers}.{hints}" if hints else ""
        stretched = attempt.trainer.updates_done > int(settings.max_updates)  # the second attempt's schedule
        key = "pilot.tiny.max_updates_if_falling" if stretched else "pilot.tiny.max_updates"
        return "warn", said or slow_drop(numbers, int(settings.get(key.rsplit(".", 1)[1])), key)
    trainer = attempt.trainer
    lr = float(cfg.optim.lr)
    unmoved = unmoved_hint(attempt.weights_before, trainer.raw_model, lr, trainer.updates_done)
    hints = _zero_loss_wrong(attempt) + warmup_hint(int(cfg.optim.warmup_updates), trainer.updates_done, lr) + hints
    hints += _slow_at_this_rate(attempt, lr) if not hints or FROZEN_ON_PATH in hints else ""  # frozen on purpose?
    return "fail", f"cannot learn the subset: {numbers}.{unmoved if unmoved and lr == 0 else unmoved + hints}"


def _slow_at_this_rate(attempt: _Attempt, lr: float) -> str:
    """The loss still falling steadily when the updates ran out (``still_falling``): a correct model trained from
    scratch at a fine-tune's learning rate failed with no hint; else ""."""
    falling = still_falling(attempt.curve, attempt.scorer.loss_floor) if lr > 0 else ""
    if not falling:
        return ""
    return (
        f" Its loss was still falling when the updates ran out ({falling}): at optim.lr={lr:g} this model learns "
        "slowly (the check trains at the run's own settings; a model trained from scratch often needs more than a "
        "fine-tune's rate). To tell a slow loop from a broken one: the pilot again with a larger optim.lr, e.g. "
        "10x, or more pilot.tiny.max_updates_if_falling."
    )


ZERO_LOSS = 1e-6  # of the loss at the start: the loss has nothing left to learn


def _zero_loss_wrong(attempt: _Attempt) -> str:
    """The loss at zero while predict still gets examples wrong: the loss gives those examples no gradient."""
    if abs(attempt.final_loss) > ZERO_LOSS * max(abs(attempt.initial_loss), 1e-12):
        return ""
    return (
        f" The loss is at zero ({attempt.final_loss:.3g}) while predict still gets {1 - attempt.recovery:.0%} of the "
        "examples wrong: loss_sum gives those examples no gradient at all — a label the loss does not read as a "
        "target (0/1 where it takes 1 and -1, as CosineEmbeddingLoss and HingeEmbeddingLoss do: a 0 trains "
        "nothing), or a margin a wrong prediction already meets. Fix: give loss_sum the label convention it expects."
    )


@torch.no_grad()
def _loss_own_floor(task: TaskData, trainer: Trainer, scorer: SubsetScorer, below: float) -> float | None:
    """The lowest loss per target loss_sum reaches on the subset over free logits (``loss_floor``): label
    smoothing or soft targets keep it above 0, and the drop is judged towards it."""
    model = trainer.raw_model
    model.eval()
    try:
        outputs = []
        for collated in scorer.batches:
            batch, output, _ = forward_loss(task, model, collated, trainer.device, trainer.autocast)
            outputs.append((output, batch))
        return loss_floor(task, outputs, below=below)  # under it: no floor of its own
    except Exception:  # noqa: BLE001 - a loss whose logits cannot be replaced: judged against the data's floor
        return None


def _scoring_at_fault(scorer: SubsetScorer, short: bool, final_loss: float, loss_target: float) -> bool:
    """What counts a target correct is at fault (not the loop): it counts more correct than there are
    targets, or recovery falls ``short`` where the loss says predict should recover, or correct_count
    gives a share where the loss has learnt."""
    learnt_share = scorer.share is not None and final_loss <= loss_target
    return scorer.overcounted is not None or (short and (_predict_disagrees(scorer, final_loss) or learnt_share))


def _model_hints(model: torch.nn.Module, cfg: DictConfig) -> str:
    lr = float(cfg.optim.lr)
    return (
        frozen_head_hint(model)
        + adapter_rate_hint(model, lr)
        + scaled_logits_hint(model, lr)
        + half_weights_hint(model)
    )


def _predict_disagrees(scorer: SubsetScorer, final_loss: float) -> bool:
    """Whether ``task.predict`` gets far fewer targets right than the loss allows. A mean loss per target
    L (cross-entropy: -log p of each label) leaves at most L / ln 2 of the targets with p <= 1/2
    (Markov), and every other one is its position's argmax; predict right on less than half of that
    share reads other positions or classes than the loss trains. Only where every target is determined
    (no loss floor) and the task has no correct_count of its own."""
    if scorer.task.correct_count is not None or scorer.loss_floor > 0 or scorer.target_accuracy is None:
        return False
    if scorer.regression:  # the bound is cross-entropy's: a squared error says nothing of it
        return False
    bound = 1.0 - final_loss / math.log(2.0)
    return bound >= 0.5 and scorer.target_accuracy < bound / 2


OPPOSITE = 0.05  # predict right on at most this share of targets the loss learnt: the opposite convention


def _scoring_disagrees(scorer: SubsetScorer, numbers: str, model: torch.nn.Module, device: torch.device) -> str:
    """The loss learnt the subset, but what counts an example correct says otherwise (or counts more
    correct targets than there are): the task's predict or correct_count, not the loop, is at fault."""
    if scorer.share is not None and scorer.overcounted is None:
        said, targets = scorer.share
        return (
            f"the loss learnt the subset, but task.correct_count returned {said:.3g} for a batch of {targets:g} "
            f"targets: a share, where a count is due, so accuracy is that share divided by the targets again "
            f"({numbers}). Fix: return the number of targets predicted correctly (a sum, not a mean)."
        )
    if scorer.overcounted is not None:
        said, targets = scorer.overcounted
        return (
            f"task.correct_count counts {said:g} correct in a batch where target_count counts {targets:g} "
            "targets: it counts positions that are not targets (labels == -100, padding), so every accuracy it "
            f"gives is inflated ({numbers}). Fix: count only where labels != -100 (as target_count does)."
        )
    hints = learning_hints(scorer.task, model, scorer.batches[0], device)  # which output predict reads
    labels = scorer.batches[0].get("labels") if scorer.batches else None  # one per row: no position to misread
    if scorer.target_accuracy <= OPPOSITE and torch.is_tensor(labels) and labels.dim() == 1:
        return (
            f"the loss learnt the subset but task.predict calls nearly every target wrong: {numbers}; predict gets "
            f"{scorer.target_accuracy:.0%} right, below any chance level: the loss trains the opposite of what "
            "predict and the labels call right. Either loss_sum's arguments are swapped (the positive and the "
            "negative of a triplet or pairwise loss: it pulls the wrong candidate closer) or a sign is flipped, or "
            "predict reads the opposite convention (argmax of distances, argmin of scores). Fix: the one of the "
            f"two that disagrees with the labels.{hints}"
        )
    return (
        f"the loss learnt the subset but task.predict does not recover it: {numbers}; predict gets "
        f"{scorer.target_accuracy:.0%} of the targets right where this loss leaves most of them the most "
        "likely token. predict reads other positions or classes than loss_sum trains (not shifted as "
        "loss_sum shifts, another label mapping). Fix: make predict read what loss_sum trains (the alignment "
        f"check names the position each target is trained at).{hints}"
    )
