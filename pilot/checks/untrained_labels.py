"""Labels that mark a position the loss does not train, found by the loss's own gradient.

The row checks (``pilot.checks.collated``) read the positions the loss counts from the labels (not
-100). A task may instead leave positions out inside ``loss_sum``: labels kept at padding and the
per-token loss multiplied by the attention mask, a custom mask over the prompt. For the first
``ALWAYS`` micro-batches, and for any whose rows a check flags for positions the labels count, the
loss's gradient on the model's output (``loss_probe.output_gradient``: one backward of ``loss_sum`` to
the output made a leaf, the model untouched) says which labelled positions the loss pushes towards
their label. The others are taken out of the rows' counted positions and the rows are checked again:
a finding stays only where the loss trains what it names. Labelled padding the loss leaves out is
one warning (pilot's counts of targets and correct predictions, a run's accuracy and
predictions.jsonl, read a label that is not -100 as a target); a labelled real token it leaves out
fails (a loss mask one position off, a real <eos> equal to the pad id). The tiny subset judges its
recovery on the positions the loss trains (``subset_scorer``).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

import torch

from pilot.checks.inputs_trained import inputs_trained, inputs_trained_finding
from pilot.checks.loss_probe import input_ids_of, output_gradient, prediction_offset, real_mask, spans
from pilot.checks.padding import padding_value, with_comparison
from pilot.checks.result import CheckResult, Finding
from pilot.data.task import NEXT_TOKEN, Batch, TaskData, move_to

if TYPE_CHECKING:
    from pilot.checks.collated import RowView

# row findings about positions the labels count (``collated.check_row``, ``target_findings``)
ABOUT_COUNTED = (
    "counted position(s)",
    "non-target token(s) counted",
    "instruction tokens counted",
    "labels at position(s)",
)
SECONDS = 30.0  # measuring stops after this long; the micro-batches left keep their findings, said so
ALWAYS = 2  # the first micro-batches measured whatever the row checks found
PUSHED_SHARE = 0.9  # of the labelled real positions, the share the measured output must push towards their label


class LossPositions:
    """Which label positions of a micro-batch the loss trains, measured on ``model`` (eval mode, no
    parameter changed), within ``SECONDS`` in all."""

    def __init__(self, task: TaskData, model: torch.nn.Module | None) -> None:
        self.task, self.model = task, model
        self.deadline = time.monotonic() + SECONDS
        self.measured = self.not_measured = 0  # micro-batches measured, and left unmeasured (time)
        self.untrained: list[tuple[str, int, list[int]]] = []  # (split, example, label positions)
        self.seen = 0  # micro-batches offered
        self.outside: torch.Tensor | None = None  # the last measured micro-batch's ``inputs_trained``
        self.inputs: list[tuple[str, int, list[int]]] = []  # (split, example, output positions) so trained

    def wanted(self, findings: list[Finding]) -> bool:
        """A micro-batch to measure: one whose rows are flagged for positions the labels count, and the
        first ``ALWAYS`` ones anyway (a loss that skips real targets its labels and count agree on)."""
        if self.model is None:
            return False
        self.seen += 1
        return self.seen <= ALWAYS or any(f.problem.startswith(ABOUT_COUNTED) for f in findings)

    def trained(self, batch: Batch) -> torch.Tensor | None:
        """``loss_trained`` within the time given; None when time is up. What the same gradient trains where
        no label counts is kept for ``keep_trained`` (``inputs_trained``)."""
        if time.monotonic() > self.deadline:
            self.not_measured += 1
            return None
        grad = loss_gradient(self.task, self.model, batch)
        trained = None if grad is None else trained_by(self.task, batch, grad)
        self.outside = None if trained is None else inputs_trained(self.task, batch, grad, _output_shift(self.task))
        self.measured += trained is not None
        return trained

    def keep_trained(self, views: list[RowView], trained: torch.Tensor) -> tuple[bool, list[Finding]]:
        """Take the label positions the loss does not train out of each row's counted ones: whether any was,
        and the rows where those are real tokens of the pad id's value (a loss that leaves out labels equal
        to the pad id: a real <eos> too), said when no declared target would show it."""
        dropped, found = False, []
        batch = views[0].batch
        if self.outside is not None:
            for view in views:
                if view.row < self.outside.shape[0] and (at := self.outside[view.row].nonzero().flatten().tolist()):
                    self.inputs.append((view.split, view.example.index, at))
        mask, ids = real_mask(self.task, batch), input_ids_of(batch)
        if mask is None:  # labels of no positions (one per row) beside an output of several: nothing to take out
            return dropped, found
        mask = mask.tolist()
        ids = ids.tolist() if ids is not None and ids.dim() == 2 else None
        pad = padding_value(self.task, batch)
        for view in views:
            if view.row >= trained.shape[0]:
                continue
            keep = trained_labels(self.task, trained[view.row].tolist(), view.counted)
            if all(keep):
                continue
            gone = [(p, q) for p, q, k in zip(view.counted, view.predicted, keep) if not k]
            real = [(p, q) for p, q in gone if q < len(mask[view.row]) and mask[view.row][q]]
            padding = [p for p, q in gone if (p, q) not in real]
            if padding:  # labelled padding the loss leaves out: right, but the counts read it (a warning)
                self.untrained.append((view.split, view.example.index, padding))
            skipped = {v for p, q, v in zip(view.counted, view.predicted, view.values) if (p, q) in real}
            never = skipped - {v for v, k in zip(view.values, keep) if k}  # a label value left out wherever it is
            never = never if self.task.convention != NEXT_TOKEN else set()  # a class, not a vocabulary's token
            # declared targets: collated.target_findings says a skipped one, unless a whole class is left out
            if real and (self.task.expected_targets is None or never):
                by_value = ids is not None and pad is not None and all(ids[view.row][q] == pad for _, q in real)
                said = _by_value(real, pad) if by_value else _real_skipped(real, never, self.task)
                found.append(Finding(said, view.split, view.example.index))
            view.counted = [p for p, k in zip(view.counted, keep) if k]
            view.predicted = [p for p, k in zip(view.predicted, keep) if k]
            view.values = [v for v, k in zip(view.values, keep) if k]
            dropped = True
        return dropped, found

    def judged(self, result: CheckResult) -> CheckResult:
        """Inspect's ``result`` with what the loss's gradient said: positions the labels leave out trained towards
        the inputs' tokens (a failure), labels the loss does not train (a warning)."""
        result = with_comparison(result, *self.findings(), "untrained_labels", "warn")
        trained = {"positions": sum(len(p) for _, _, p in self.inputs)}
        return with_comparison(result, inputs_trained_finding(self.inputs), trained, "inputs_trained", "fail")

    def findings(self) -> tuple[list[Finding], dict]:
        """One warning for the labels the loss does not train, with the numbers."""
        details = {"micro_batches_measured": self.measured, "micro_batches_not_measured": self.not_measured}
        if not self.untrained:
            return [], details
        split, example, positions = self.untrained[0]
        count = sum(len(p) for _, _, p in self.untrained)
        later = (
            f"; {self.not_measured} more micro-batch(es) with such findings were not measured (time) and keep them"
            if self.not_measured
            else ""
        )
        problem = (
            f"labels mark {count} position(s) of {len(self.untrained)} example(s) as targets (not -100) that "
            f"loss_sum does not train (its gradient does not push them towards their label; first: {split} example {example}, positions "
            f"{spans(positions)}): the loss is judged by what it trains, but pilot's counts of targets and of "
            "correct predictions (a run's accuracy without a task's correct_count, predictions.jsonl) read every label that is "
            f"not -100 as a target{later}. Fix: set labels to -100 wherever loss_sum leaves a position out"
        )
        details["untrained_label_positions"] = count
        return [Finding(problem)], details


def _by_value(real: list[tuple[int, int]], pad: int) -> str:
    return (
        f"real token(s) labelled as targets that loss_sum does not train (positions {spans([p for p, _ in real])}): "
        f"each is token {pad}, the value at every padding position, so a loss that leaves out labels equal to the "
        "pad id drops the real ones too (a pad token set to the end-of-sequence token, as GPT-2's tokenizers are). "
        "Fix: leave padding out by position (the attention mask), or a pad id no real token uses"
    )


def _real_skipped(real: list[tuple[int, int]], never: set, task: TaskData) -> str:
    """``never``: label values the loss leaves out wherever they stand in the row (a whole class left out)."""
    names = task.names()
    shown = [f"'{names[v]}' ({v})" if isinstance(v, int) and 0 <= v < len(names) else str(v) for v in sorted(never)]
    whole = f"; every label {', '.join(shown)} is left out, so that class is never trained" if shown else ""
    return (
        f"real token(s) labelled as targets that loss_sum does not train (positions {spans([p for p, _ in real])}{whole}): "
        "the loss skips targets its labels give (a mask one position off, the last token's <eos>), or leaves "
        "them out on purpose and the labels say otherwise. Fix: train them, or set their labels to -100"
    )


def loss_gradient(task: TaskData, model: torch.nn.Module, batch: Batch, values: bool = False) -> torch.Tensor | None:
    """d loss_sum / d output, [rows, output positions, classes] on the CPU, or None when it cannot be told
    (no sequence of scores, a loss that trains nothing here, a loss the probe cannot differentiate). The
    model is put in eval mode; no parameter changes. ``values``: a [rows, positions] output beside float
    labels of its shape (a multi-output regression) is one value per position, [rows, positions, 1]."""
    try:
        device = next(model.parameters()).device
        batch = move_to(batch, device)
        model.eval()
        with torch.no_grad():
            output = task.forward(model, batch)
        _, grad, _ = output_gradient(task, output, batch, recompute=partial(task.forward, model, batch))
    except Exception:  # noqa: BLE001 - then what the labels say stands
        return None
    labels = batch.get("labels")
    if values and grad.dim() == 2 and torch.is_tensor(labels) and labels.is_floating_point():
        grad = grad.unsqueeze(-1) if labels.shape == grad.shape else grad
    if grad.dim() != 3 or not bool((grad != 0).any()):
        return None
    return grad.detach().cpu()


def loss_trained(task: TaskData, model: torch.nn.Module, batch: Batch) -> torch.Tensor | None:
    """[rows, output positions] on the CPU: True where the loss trains the output towards its label (the
    label's class has a negative gradient: cross-entropy's softmax - one-hot, label smoothing too; a term
    that reads no label, a z-loss, pushes none up), or, where no class id labels the output, where the
    gradient reaches it at all (a regression's values too: one its loss masks, a value never measured, is not
    judged by the tiny subset); None when it cannot be told."""
    grad = loss_gradient(task, model, batch, values=True)
    return None if grad is None else trained_by(task, batch, grad)


def trained_by(task: TaskData, batch: Batch, grad: torch.Tensor) -> torch.Tensor | None:
    """``loss_trained`` from the loss's gradient on the output."""
    reached = (grad != 0).any(dim=-1)
    labels = batch.get("labels")
    if not torch.is_tensor(labels) or labels.dim() != 2 or labels.is_floating_point() or len(labels) != len(grad):
        return reached
    if tuple(grad.shape[:2]) != tuple(labels.shape):  # frames, not label positions (CTC): not paired here
        return None
    labels, width, classes = labels.cpu(), grad.shape[1], grad.shape[-1]
    shift = _output_shift(task)  # output o scores label o - shift
    at = torch.arange(width) - shift
    inside = (at >= 0) & (at < labels.shape[1])
    label = torch.full((len(labels), width), -1, dtype=torch.long)
    label[:, inside] = labels[:, at[inside]].long()
    labelled = (label >= 0) & (label < classes)
    pushed = grad.gather(-1, label.clamp(0, classes - 1).unsqueeze(-1)).squeeze(-1) < 0
    real = _real_outputs(task, batch, shift, width)
    if real is not None and bool((labelled & real).any()):  # another head's output (a multi-head model's
        share = float(pushed[labelled & real].float().mean())  # largest) is not these labels'
        if share < PUSHED_SHARE and not _classes_left_out(label[labelled & real], pushed[labelled & real]):
            return None
    return torch.where(labelled, pushed, reached)


def _classes_left_out(labels: torch.Tensor, pushed: torch.Tensor) -> bool:
    """Whether the loss trains some label classes at every position and others at none: these labels' loss
    leaving classes out (a tagger's loss masked with labels > 0, ignore_index set to the 'O' tag), not another
    head's output, whose gradient follows no class of these labels."""
    kept = left = 0
    for value in labels.unique().tolist():
        share = float(pushed[labels == value].float().mean())
        kept += share == 1.0
        left += share == 0.0
    return kept > 0 and left > 0 and kept + left == len(labels.unique())


def _real_outputs(task: TaskData, batch: Batch, shift: int, width: int) -> torch.Tensor | None:
    """[rows, output positions]: True where the output scores a real token's label (mask 1 at the token
    its label predicts), or None when the batch has no mask of its labels' width."""
    mask = real_mask(task, batch)
    if mask is None or mask.dim() != 2:
        return None
    mask = mask.cpu().bool()
    offset = prediction_offset(task)
    at = torch.arange(width) - shift + offset  # output o -> label o - shift -> predicted token + offset
    inside = (at >= 0) & (at < mask.shape[1])
    real = torch.zeros((mask.shape[0], width), dtype=torch.bool)
    real[:, inside] = mask[:, at[inside]]
    return real


def _output_shift(task: TaskData) -> int:
    """The output that scores label position p is p + this (a next-token label at p: output p - 1, or p
    when the labels are shifted already; same-position labels: p)."""
    return prediction_offset(task) - 1 if task.convention == NEXT_TOKEN else 0


def trained_labels(task: TaskData, trained_row: list[bool], positions: list[int]) -> list[bool]:
    """For each label position, whether the loss trains the output that scores it; one out of reach: True."""
    shift = _output_shift(task)
    return [not 0 <= p + shift < len(trained_row) or trained_row[p + shift] for p in positions]
