"""What "recovered" means on the tiny subset (``SubsetScorer``): the loss per target and the share of
examples recovered, under the rule the subset allows (every target; determined positions, above the
subset's loss floor; or the task's own correct_count). See ``pilot.checks.tiny_subset``."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import torch

from pilot.checks.context_reach import context_reach
from pilot.checks.label_kinds import class_distributions, regression
from pilot.checks.loss_probe import SEQ2SEQ, counted_label_mask, input_ids_of, prediction_offset, real_mask
from pilot.checks.same_inputs import fed_from_labels
from pilot.checks.untrained_labels import loss_trained, trained_labels
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, Batch, TaskData
from pilot.engine.forward import forward_loss

if TYPE_CHECKING:
    from pilot.engine.trainer import Trainer


def by_row(labels: torch.Tensor) -> torch.Tensor:
    """Labels of more than one dimension per example (a segmentation's [B, H, W] mask) as one row of
    positions per example, [B, H x W]: the scorer counts a position by its row and place in it (a label of
    [B, H, W] was indexed by its row and image line, which crashed: 'only one element tensors')."""
    return labels.reshape(labels.shape[0], -1) if labels.dim() > 2 else labels


def as_classes(batch: Batch) -> Batch:
    """``batch`` with its soft labels as their most likely class (``class_distributions``)."""
    return {**batch, "labels": batch["labels"].argmax(-1)}


def _context_keys(
    task: TaskData, batch: Batch, trained: torch.Tensor | None = None, reach: int | None = None
) -> list[list[tuple[int, Any]]]:
    """Per row: (label position, the context that determines it) for every counted label (``trained``:
    the output positions the loss trains, ``untrained_labels.loss_trained``: only the labels it trains;
    ``reach``: a next-token model reads only that many tokens, ``context_reach``)."""
    labels = by_row(batch["labels"])
    counted = counted_label_mask(task, labels)
    if trained is not None and trained.numel() == labels.numel() and trained.dim() > 2:
        trained = by_row(trained)
    if trained is not None and labels.dim() == 2 and trained.shape[0] == labels.shape[0]:
        for row in range(labels.shape[0]):
            positions = torch.nonzero(counted[row]).flatten().tolist()
            keep = trained_labels(task, trained[row].tolist(), positions)
            counted[row, [p for p, k in zip(positions, keep) if not k]] = False
    rows: list[list[tuple[int, Any]]] = []
    if labels.dim() < 2:  # one label per example: its context is the example's input; an example the loss
        # gives no gradient (an example weight of 0: a tie among annotators) is not trained, so not judged
        reached = trained if trained is not None and tuple(trained.shape) == tuple(labels.shape) else None
        return [
            [(row, _inputs_of(batch, row))] if bool(counted[row]) and (reached is None or bool(reached[row])) else []
            for row in range(labels.shape[0])
        ]
    ids = input_ids_of(batch)
    mask = real_mask(task, batch).tolist()
    ids_list = ids.tolist() if ids is not None else None
    shift = prediction_offset(task)
    for row in range(labels.shape[0]):
        real = [p for p, m in enumerate(mask[row]) if m]
        positions = [p for p, c in enumerate(counted[row].tolist()) if c]
        if task.kind == SEQ2SEQ:  # the decoder reads the whole source and the target so far (teacher forcing)
            source = {k: v for k, v in batch.items() if k == "labels" or not fed_from_labels(v, batch["labels"])}
            inputs, targets = _inputs_of(source, row), labels[row].tolist()
            rows.append([(p, (inputs, tuple(targets[:p]))) for p in positions])
            continue
        if ids_list is None or ids.shape[-1] != labels.shape[-1]:
            # labels not of the inputs' positions (multi-label, a span's start and end, a decoder's
            # targets): the whole row's inputs and the label's place
            inputs = _inputs_of(batch, row)
            rows.append([(p, (inputs, p)) for p in positions])
            continue
        tokens = [ids_list[row][p] for p in real]
        if task.convention == NEXT_TOKEN:  # the real tokens before the predicted one (of its own example)
            segment = _segments(batch, row, list(range(labels.shape[-1])))
            keys = [
                (p, tuple(ids_list[row][r] for r in real if r < p + shift and segment[r] == segment[p + shift - 1]))
                for p in positions
            ]
            if reach is not None:  # what the model reads of it: its last ``reach`` tokens
                keys = [(p, context[-reach:]) for p, context in keys]
        else:  # a tagger reads the row up to its own token, or (a causal model) no further: that prefix
            keys = [(p, tuple(tokens[: sum(1 for r in real if r <= p)])) for p in positions]
        rows.append(keys)
    return rows


def _counted_examples(task: TaskData, items: list[dict]) -> torch.Tensor | None:
    """[rows]: whether each example counts any target on its own (``target_count`` of it alone > 0); None
    unless the labels are one per example and some example counts none. An example weight of 0 (a tie among
    annotators, target_count the sum of the weights) declares the example untrained: it is not judged."""
    batch = task.collate(items)
    labels = batch.get("labels")
    if not torch.is_tensor(labels) or labels.dim() != 1 or len(labels) != len(items):
        return None
    try:
        counted = torch.tensor([float(task.target_count(task.collate([item]))) > 0 for item in items])
    except Exception:  # noqa: BLE001 - a count that needs a batch: every labelled example is judged
        return None
    return None if bool(counted.all()) else counted


def _inputs_of(batch: Batch, row: int) -> tuple[bytes, ...]:
    """A row's inputs (every per-example tensor but its labels and index), as bytes to compare; a tensor of
    k rows per example (a multiple choice's candidates flattened to [examples x k, width]) gives its k."""
    size = batch["labels"].shape[0]
    return tuple(
        v[row * (v.shape[0] // size) : (row + 1) * (v.shape[0] // size)].detach().cpu().numpy().tobytes()
        for k, v in sorted(batch.items())
        if k not in ("labels", "index") and torch.is_tensor(v) and v.dim() > 0 and v.shape[0] % size == 0
    )


def _segments(batch: Batch, row: int, positions: list[int]) -> list[int]:
    """Which example of a packed row each label position belongs to: a row of several examples
    concatenated (transformers' ``DataCollatorWithFlattening``) restarts its ``position_ids`` at 0 for
    each; 0 for every position of a row of one example."""
    ids, labels = batch.get("position_ids"), batch["labels"]
    if not (torch.is_tensor(ids) and ids.dim() == 2 and labels.dim() == 2 and ids.shape == labels.shape):
        return [0] * len(positions)
    starts = (ids[row] == 0).long().cumsum(0).tolist()
    return [starts[p] for p in positions]


TOLERANCE = 0.1  # of the subset's targets' root mean square: a regression's prediction counted recovered


WHOLE_NUMBERS = 0.5  # the most a prediction of whole-number targets may be off: it still rounds to its own


def _tolerance(answers: dict[Any, Counter]) -> tuple[float, str]:
    """(tolerance, how it was chosen): ``TOLERANCE`` of the root mean square of the subset's float targets
    (their typical magnitude, the spread of targets centred on 0), at least 1e-6; whole-number targets (ratings, counts, class ids
    coded as floats) at most ``WHOLE_NUMBERS``, so that a prediction counted recovered rounds to its target."""
    values = torch.tensor([value for counts in answers.values() for value in counts.elements()], dtype=torch.float64)
    share = f"{TOLERANCE:g} of the subset's targets' root mean square"
    if not values.numel():
        return 1e-6, share
    tolerance = max(1e-6, TOLERANCE * float(values.square().mean().sqrt()))
    if tolerance > WHOLE_NUMBERS and bool((values == values.round()).all()):
        return WHOLE_NUMBERS, f"whole-number targets: at most {WHOLE_NUMBERS:g}, less than {share}"
    return tolerance, share


class SubsetScorer:
    """Loss per target and recovery on a fixed subset, under the rule the subset allows."""

    def __init__(self, task: TaskData, items: list[dict], eval_micro_batch: int, model: torch.nn.Module | None = None):
        """``model`` (fresh, before training): labels its loss does not train are not judged (labels kept at
        padding that ``loss_sum`` masks itself, ``pilot.checks.untrained_labels``)."""
        self.task = task
        self.overcounted: tuple[float, float] | None = None  # (correct_count, target_count) of a batch
        self.share: tuple[float, float] | None = None  # a fraction correct_count gave (and target_count)
        self.target_accuracy: float | None = None  # share of judged targets predict gets right (last score)
        self.batches = [task.collate(items[s : s + eval_micro_batch]) for s in range(0, len(items), eval_micro_batch)]
        trained = [loss_trained(task, model, batch) if model is not None else None for batch in self.batches]
        trained = [
            _counted_examples(task, items[s : s + eval_micro_batch]) if mask is None else mask
            for s, mask in zip(range(0, len(items), eval_micro_batch), trained)
        ]
        self.reach = context_reach(task, model, items)  # a model that reads only its last few tokens
        self.distributions = class_distributions(self.batches)
        keyed = [as_classes(batch) for batch in self.batches] if self.distributions else self.batches
        self.keys = [_context_keys(task, batch, mask, self.reach) for batch, mask in zip(keyed, trained)]
        labelled = sum(len(rows) for batch in keyed for rows in _context_keys(task, batch))
        self.untrained = labelled - sum(len(rows) for keys in self.keys for rows in keys)  # labels the loss ignores
        # values (a regression, ``label_kinds.regression``: declared, or float labels that are no classes and
        # no class distributions, whole numbers included): a prediction never equals one exactly; within
        # ``tolerance`` counts. Multi-hot floats (0.0 / 1.0) are classes: compared exactly
        self.regression = bool(self.batches) and regression(task, self.batches)
        answers: dict[Any, Counter] = defaultdict(Counter)
        for batch, rows in zip(keyed, self.keys):
            labels = by_row(batch["labels"])
            for row, keys in enumerate(rows):
                for position, key in keys:
                    value = labels[position] if labels.dim() < 2 else labels[row, position]
                    answers[key][value.item() if self.regression else int(value)] += 1
        self.tolerance, tolerance_rule = _tolerance(answers) if self.regression else (0.0, "")
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
        self.rule = self._rule(targets, tolerance_rule)

    def _rule(self, targets: int, tolerance_rule: str) -> str:
        """The rule a recovered example is judged by, in words."""
        if self.task.correct_count is not None:
            rule = "the task's correct_count (share of targets it counts correct)"
        elif self.ambiguous_targets:
            rule = (
                f"determined positions: {targets - self.ambiguous_targets} of {targets} targets have a "
                f"context that fixes the answer within the subset; {self.ambiguous_targets} share "
                f"their context with another answer (loss floor {self.loss_floor:.3g})"
            )
        else:
            rule = "every target (each context fixes its answer within the subset)"
        if self.reach is not None and self.task.correct_count is None:
            rule += (
                f"; a context is the last {self.reach} token(s): the fresh model's output reads no further "
                "(measured: replacing every earlier token leaves it unchanged)"
            )
        if self.untrained and self.task.correct_count is None:
            rule += f"; {self.untrained} labelled position(s) the loss does not train are not judged"
        if self.regression and self.task.correct_count is None:
            rule += (
                f"; float labels: a prediction within {self.tolerance:.3g} of its target ({tolerance_rule}) "
                "counts as recovered"
            )
        return rule

    @property
    def recovered_as(self) -> str:
        """How a recovered target is counted, in words: exactly, or within the regression's tolerance."""
        if self.regression and self.task.correct_count is None:
            return f"within {self.tolerance:.3g}"
        return "exactly"

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
            if self.distributions and predicted.shape == labels.shape:  # a distribution: its most likely class
                predicted, labels = predicted.argmax(-1), labels.argmax(-1)
            labels = by_row(labels)
            if predicted.numel() == labels.numel() and predicted.dim() > 2:
                predicted = by_row(predicted)  # a [B, H, W] mask's prediction, as its labels: a row of pixels
            if self.regression and predicted.numel() == labels.numel():
                hit = (predicted.reshape(labels.shape).float() - labels.float()).abs() <= self.tolerance
            else:
                hit = (predicted == labels) | (labels == IGNORE_INDEX)
            for row, keys in enumerate(rows):
                judged = [p for p, key in keys if key in self.determined]
                if not judged:
                    continue
                row_hits = [bool(hit[p] if hit.dim() < 2 else hit[row, p]) for p in judged]
                examples: dict[int, bool] = {}  # a packed row's examples, each recovered or not
                for segment, right in zip(_segments(batch, row, judged), row_hits):
                    examples[segment] = examples.get(segment, True) and right
                scored += len(examples)
                recovered += sum(examples.values())
                hits, judged_targets = hits + sum(row_hits), judged_targets + len(row_hits)
        self.target_accuracy = hits / judged_targets if judged_targets else None
        if task.correct_count is not None:
            return loss / max(count, 1.0), correct / max(count, 1.0)
        return loss / max(count, 1.0), recovered / max(scored, 1)
