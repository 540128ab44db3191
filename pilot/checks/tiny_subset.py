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

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pilot.checks.learning_hints import FROZEN_OUTPUT, learning_hints
from pilot.checks.loss_floor import loss_floor
from pilot.checks.loss_probe import counted_label_mask, input_ids_of, prediction_offset, real_mask
from pilot.checks.result import CheckResult
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, Batch, TaskData
from pilot.engine.build import build_model as build_fresh_model
from pilot.engine.forward import forward_loss
from pilot.engine.trainer import Trainer
from pilot.models.adapter import adapter_rate_hint, frozen_head_hint

NO_FLOOR = 0.01  # a loss's own floor below 1% of where it starts is 0 (Adam on free logits stops near 1e-4)
STEP = "tiny_subset"


def _context_keys(task: TaskData, batch: Batch) -> list[list[tuple[int, Any]]]:
    """Per row: (label position, the context that determines it) for every counted label."""
    labels = batch["labels"]
    counted = counted_label_mask(task, labels)
    rows: list[list[tuple[int, Any]]] = []
    if labels.dim() < 2:  # one label per example: its context is the example's input
        return [[(row, _inputs_of(batch, row))] if bool(counted[row]) else [] for row in range(labels.shape[0])]
    ids = input_ids_of(batch)
    mask = real_mask(task, batch).tolist()
    ids_list = ids.tolist() if ids is not None else None
    shift = prediction_offset(task)
    for row in range(labels.shape[0]):
        real = [p for p, m in enumerate(mask[row]) if m]
        positions = [p for p, c in enumerate(counted[row].tolist()) if c]
        if ids_list is None:  # several labels of one input (multi-label): the input and the label's place
            inputs = _inputs_of(batch, row)
            rows.append([(p, (inputs, p)) for p in positions])
            continue
        tokens = [ids_list[row][p] for p in real]
        if task.convention == NEXT_TOKEN:  # the real tokens before the predicted one
            keys = [(p, tuple(tokens[: sum(1 for r in real if r < p + shift)])) for p in positions]
        else:  # a tagger sees the whole input: the context is the row and the place in it
            keys = [(p, (tuple(tokens), sum(1 for r in real if r < p))) for p in positions]
        rows.append(keys)
    return rows


def _inputs_of(batch: Batch, row: int) -> tuple[bytes, ...]:
    """A row's inputs (every per-example tensor but its labels and index), as bytes to compare."""
    size = batch["labels"].shape[0]
    return tuple(
        v[row].detach().cpu().numpy().tobytes()
        for k, v in sorted(batch.items())
        if k not in ("labels", "index") and torch.is_tensor(v) and v.dim() > 0 and v.shape[0] == size
    )


class SubsetScorer:
    """Loss per target and recovery on a fixed subset, under the rule the subset allows."""

    def __init__(self, task: TaskData, items: list[dict], eval_micro_batch: int):
        self.task = task
        self.overcounted: tuple[float, float] | None = None  # (correct_count, target_count) of a batch
        self.share: tuple[float, float] | None = None  # a fraction correct_count gave (and target_count)
        self.target_accuracy: float | None = None  # share of judged targets predict gets right (last score)
        self.batches = [task.collate(items[s : s + eval_micro_batch]) for s in range(0, len(items), eval_micro_batch)]
        self.keys = [_context_keys(task, batch) for batch in self.batches]
        answers: dict[Any, Counter] = defaultdict(Counter)
        for batch, rows in zip(self.batches, self.keys):
            labels = batch["labels"]
            for row, keys in enumerate(rows):
                for position, key in keys:
                    answers[key][int(labels[position] if labels.dim() < 2 else labels[row, position])] += 1
        self.determined = {key for key, counts in answers.items() if len(counts) == 1}
        targets = sum(sum(c.values()) for c in answers.values())
        ambiguous = [c for c in answers.values() if len(c) > 1]
        self.ambiguous_targets = sum(sum(c.values()) for c in ambiguous)
        self.targets = targets
        # the lowest mean loss any model can reach here: the conditional entropy of the targets
        self.loss_floor = (
            (sum(-n * math.log(n / sum(c.values())) for c in ambiguous for n in c.values()) / targets)
            if targets
            else 0.0
        )
        if task.correct_count is not None:
            self.rule = "the task's correct_count (share of targets it counts correct)"
        elif self.ambiguous_targets:
            self.rule = (
                f"determined positions: {targets - self.ambiguous_targets} of {targets} targets have a "
                f"context that fixes the answer within the subset; {self.ambiguous_targets} share "
                f"their context with another answer (loss floor {self.loss_floor:.3g})"
            )
        else:
            self.rule = "every target (each context fixes its answer within the subset)"

    @torch.no_grad()
    def score(self, trainer: Trainer) -> tuple[float, float]:
        """(mean loss per target, recovery) of the trainer's model on the subset."""
        task, model = self.task, trainer.raw_model
        model.eval()
        loss = count = correct = 0.0
        recovered, scored, hits, judged_targets = 0, 0, 0, 0
        for collated, rows in zip(self.batches, self.keys):
            batch, output, loss_sum = forward_loss(task, model, collated, trainer.device, trainer.autocast)
            loss += float(loss_sum)
            targets = float(task.target_count(batch))
            count += targets
            if task.correct_count is not None:
                said = float(task.correct_count(output, batch))
                if said > targets and self.overcounted is None:  # more correct than there are targets
                    self.overcounted = (said, targets)
                if 0 < said < 1 < targets and self.share is None:  # a share where a count is due
                    self.share = (said, targets)
                correct += said
                continue
            predicted, labels = task.predict(output, batch).cpu(), batch["labels"].cpu()
            hit = (predicted == labels) | (labels == IGNORE_INDEX)
            for row, keys in enumerate(rows):
                judged = [p for p, key in keys if key in self.determined]
                if not judged:
                    continue
                scored += 1
                row_hits = [bool(hit[p] if hit.dim() < 2 else hit[row, p]) for p in judged]
                recovered += all(row_hits)
                hits, judged_targets = hits + sum(row_hits), judged_targets + len(row_hits)
        self.target_accuracy = hits / judged_targets if judged_targets else None
        if task.correct_count is not None:
            return loss / max(count, 1.0), correct / max(count, 1.0)
        return loss / max(count, 1.0), recovered / max(scored, 1)


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


def tiny_subset_check(
    cfg: DictConfig, task: TaskData, device: torch.device, build_model: Callable[[], torch.nn.Module] | None = None
) -> CheckResult:
    settings = cfg.pilot.tiny
    subset = _subset(task, int(settings.examples), int(cfg.seed))
    n_examples = len(subset)
    tiny_task = replace(task, splits={"train": subset, "val": subset, "test": []})
    tiny_cfg = tiny_config(cfg, n_examples, int(settings.max_updates))
    model = build_model() if build_model is not None else build_fresh_model(cfg)
    trainer = Trainer(tiny_cfg, tiny_task, model, device)
    scorer = SubsetScorer(tiny_task, trainer.train_items, int(cfg.batch.eval_micro_batch))
    floor = scorer.loss_floor
    initial_loss, recovery = scorer.score(trainer)
    loss_target = floor + (initial_loss - floor) / float(settings.loss_drop)
    final_loss, finite = initial_loss, True
    while trainer.updates_done < trainer.plan.total_updates:
        record = trainer.train_step()
        if not (math.isfinite(record.loss) and math.isfinite(record.grad_norm)):
            finite = False
            break
        if trainer.updates_done % int(settings.check_every) == 0 or trainer.updates_done == trainer.plan.total_updates:
            final_loss, recovery = scorer.score(trainer)
            if final_loss <= loss_target and recovery >= float(settings.min_recovery):
                break
    own_floor = _loss_own_floor(tiny_task, trainer, scorer) if final_loss > loss_target else None
    if own_floor is not None and own_floor > max(floor, NO_FLOOR * initial_loss):  # not the optimiser's rest
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
        "declared_recovery": float(settings.min_recovery),
        "all_finite": finite,
        "recovery_rule": scorer.rule,
        "example_indices": [e.index for e in subset],
    }
    above_floor = f" above the floor {floor:.3g}" if floor > 0 else ""
    numbers = (
        f"loss {initial_loss:.3g} -> {final_loss:.3g} ({drop:.3g}x{above_floor}, declared "
        f">= {float(settings.loss_drop):g}x), {recovery:.0%} of {n_examples} examples recovered "
        f"exactly (declared >= {float(settings.min_recovery):.0%}; rule: {scorer.rule}) after "
        f"{trainer.updates_done} updates"
    )
    if not finite:
        return CheckResult(STEP, "fail", f"non-finite loss or gradient at update {trainer.updates_done}", [], details)
    if _scoring_at_fault(scorer, recovery < float(settings.min_recovery), final_loss, loss_target):
        return CheckResult(STEP, "fail", _scoring_disagrees(scorer, numbers, model, device), [], details)
    if final_loss <= loss_target and recovery >= float(settings.min_recovery):
        return CheckResult(STEP, "pass", "learns the subset: " + numbers, [], details)
    verdict, reason = _not_learnt(cfg, tiny_task, model, scorer, device, numbers, recovery)
    return CheckResult(STEP, verdict, reason, [], details)


def _not_learnt(
    cfg: DictConfig,
    task: TaskData,
    model: torch.nn.Module,
    scorer: SubsetScorer,
    device: torch.device,
    numbers: str,
    recovery: float,
) -> tuple[str, str]:
    """Every example recovered (the mechanism works): warn, naming why the loss stays up where a hint
    does; else fail, with what the model shows."""
    settings = cfg.pilot.tiny
    learnt = recovery >= float(settings.min_recovery)
    found = learning_hints(task, model, scorer.batches[0], device, learnt)
    hints = found if FROZEN_OUTPUT in found else _adapter_hints(model, cfg) + found  # a frozen head first
    if learnt:
        said = f"recovers the subset, but its loss fell less than declared: {numbers}.{hints}" if hints else ""
        return "warn", said or _slow_drop(numbers, int(settings.max_updates))
    return "fail", f"cannot learn the subset: {numbers}.{hints}"


@torch.no_grad()
def _loss_own_floor(task: TaskData, trainer: Trainer, scorer: SubsetScorer) -> float | None:
    """The lowest loss per target loss_sum reaches on the subset over free logits (``loss_floor``): label
    smoothing or soft targets keep it above 0, and the drop is judged towards it."""
    model = trainer.raw_model
    model.eval()
    try:
        outputs = []
        for collated in scorer.batches:
            batch, output, _ = forward_loss(task, model, collated, trainer.device, trainer.autocast)
            outputs.append((output, batch))
        return loss_floor(task, outputs)
    except Exception:  # noqa: BLE001 - a loss whose logits cannot be replaced: judged against the data's floor
        return None


def _scoring_at_fault(scorer: SubsetScorer, short: bool, final_loss: float, loss_target: float) -> bool:
    """What counts a target correct is at fault (not the loop): it counts more correct than there are
    targets, or recovery falls ``short`` where the loss says predict should recover, or correct_count
    gives a share where the loss has learnt."""
    learnt_share = scorer.share is not None and final_loss <= loss_target
    return scorer.overcounted is not None or (short and (_predict_disagrees(scorer, final_loss) or learnt_share))


def _adapter_hints(model: torch.nn.Module, cfg: DictConfig) -> str:
    return frozen_head_hint(model) + adapter_rate_hint(model, float(cfg.optim.lr))


def _predict_disagrees(scorer: SubsetScorer, final_loss: float) -> bool:
    """Whether ``task.predict`` gets far fewer targets right than the loss allows. A mean loss per target
    L (cross-entropy: -log p of each label) leaves at most L / ln 2 of the targets with p <= 1/2
    (Markov), and every other one is its position's argmax; predict right on less than half of that
    share reads other positions or classes than the loss trains. Only where every target is determined
    (no loss floor) and the task has no correct_count of its own."""
    if scorer.task.correct_count is not None or scorer.loss_floor > 0 or scorer.target_accuracy is None:
        return False
    bound = 1.0 - final_loss / math.log(2.0)
    return bound >= 0.5 and scorer.target_accuracy < bound / 2


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
    return (
        f"the loss learnt the subset but task.predict does not recover it: {numbers}; predict gets "
        f"{scorer.target_accuracy:.0%} of the targets right where this loss leaves most of them the most "
        "likely token. predict reads other positions or classes than loss_sum trains (not shifted as "
        "loss_sum shifts, another label mapping). Fix: make predict read what loss_sum trains (the alignment "
        f"check names the position each target is trained at).{hints}"
    )


def _slow_drop(numbers: str, max_updates: int) -> str:
    """Every example recovered, the loss not down as far as declared: what that means and what to change."""
    return (
        f"recovers the subset, but its loss fell less than declared: {numbers}. The loop learns; slower than "
        f"declared (the learning rate, its schedule over pilot.tiny.max_updates={max_updates}), or loss_sum has "
        "a term the logits do not set (a regulariser; label smoothing's floor is already measured). Fix: raise "
        "pilot.tiny.max_updates or the learning rate, or lower pilot.tiny.loss_drop to what this loss can reach."
    )
