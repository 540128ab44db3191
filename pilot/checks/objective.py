"""Step: the objective's contract — ``loss_sum`` is a sum over targets, ``target_count`` their number.

The engine divides the summed loss of a whole update by the update's target count; that equals
the full-batch gradient only when both are additive over examples. On a few real batches
(one forward of a fresh model, then the loss on the batch and on each example's slice of the same
output, so the model's batch dependence plays no part):

1. ``loss_sum(batch)`` must equal the sum of ``loss_sum`` over its single-example sub-batches
   (fail with the ratio: 1/B is a mean over examples; a mean over targets is named as such);
2. ``target_count(batch)`` likewise, and equal to the number of output positions the loss
   actually trains (its gradient is non-zero there): counting padding or ignored labels fails;
3. the initial loss per target of a fresh model must be near ln(K), K the width of the output
   (classes, or the vocabulary): outside ``TaskData.initial_loss_tolerance`` is a ``warn`` with
   the numbers (a loss already divided by the batch, a model that is not fresh).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import torch

from pilot.checks.class_weights import losses_by_class
from pilot.checks.decision_boundary import decision_boundary_findings
from pilot.checks.even_logits import inverted_positive_weights, loss_scaled
from pilot.checks.floorless_loss import floorless_finding
from pilot.checks.initial_loss import initial_loss_findings, negative_loss
from pilot.checks.label_kinds import as_number, class_distributions, class_ids, ordinal_head, regression
from pilot.checks.loss_alone import in_batch_scores, one_positive_for_every_row
from pilot.checks.loss_calls import binary_targets_outside, non_finite_cause
from pilot.checks.loss_floor import with_logits
from pilot.checks.loss_probe import (
    batch_size,
    micro_batches,
    output_gradient,
    positions_unlike_labels,
    pushed_classes,
    sub_batch,
    sub_output,
    trained_head_widths,
)
from pilot.checks.other_head import other_head_finding
from pilot.checks.output_reads import named_tensors, rebuilt
from pilot.checks.result import CheckResult, Finding, summarise
from pilot.checks.shift_probe import loss_reads_logits, prediction_outside_the_loss
from pilot.checks.soft_targets import flat_floor_findings, soft_target_findings
from pilot.data.task import TaskData, logits_of

STEP = "objective"
RTOL = 1e-4  # float32 sums in another order differ by far less


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * max(abs(a), abs(b), 1e-12)


def sum_contract(
    task: TaskData, output: Any, batch: dict[str, Any], model: torch.nn.Module | None = None
) -> dict[str, float]:
    """The batch's loss and count next to the sums over its single-example sub-batches (each example's
    output cut from the batch's; with ``model``, computed by its own forward: a loss_sum that returns the
    model's own loss, computed inside forward for the whole batch, cannot be cut)."""
    size = batch_size(batch)
    whole = as_number(task.loss_sum(output, batch))
    count = as_number(task.target_count(batch))
    labels = batch.get("labels")
    if not math.isfinite(whole) and (said := non_finite_cause(task, output, batch)):  # the labels, or which loss
        return {"examples": size, "loss": whole, "count": count, "single_losses": [whole], "single_counts": [count],
                "non_finite_cause": said}  # fmt: skip
    if torch.is_tensor(labels) and labels.dim() > 0 and labels.shape[0] != size:  # rows are not the examples
        # (two views per example, one packed row, filler rows): no single example can be cut out of it
        return {"examples": size, "loss": whole, "count": count, "single_losses": None, "single_counts": None}
    singles, counts = [], []
    try:
        for row in range(size):
            piece = sub_batch(batch, [row])
            if model is not None:
                with torch.no_grad():
                    alone = task.forward(model, piece)
            else:
                alone = sub_output(output, [row], size)
            singles.append(as_number(task.loss_sum(alone, piece)))
            counts.append(as_number(task.target_count(piece)))
    except (RuntimeError, ValueError, IndexError):  # a loss over the batch's columns too (CLIP's symmetric
        # cross-entropy over a [B, B] score matrix): an example's row alone is no input it takes; not cut
        return {"examples": size, "loss": whole, "count": count, "single_losses": None, "single_counts": None}
    return {"examples": size, "loss": whole, "count": count, "single_losses": singles, "single_counts": counts}


def loss_diagnosis(numbers: dict[str, Any]) -> str:
    """Why ``loss_sum(batch)`` differs from the sum of its single losses."""
    size, whole = numbers["examples"], numbers["loss"]
    singles, counts = numbers["single_losses"], numbers["single_counts"]
    total = sum(singles)
    if not all(math.isfinite(x) for x in (whole, total)):  # no ratio says anything about a sum here
        return (
            f"loss_sum is {whole:g} on a batch of {size} examples of a fresh model (their single losses "
            f"sum to {total:g}): a non-finite loss trains nothing ("
            + (numbers.get("non_finite_cause") or "look at the mask and the loss's inputs")
            + ")"
        )
    if total == 0 and whole != 0:  # each alone at the loss's floor, together not: normalised over the batch
        return (
            f"loss_sum is {whole:.4g} on a batch of {size} examples, but 0 for each example alone: the loss normalises "
            "over the batch axis (log_softmax(logits, dim=0), a softmax over the examples: one example alone is its "
            "own whole distribution), or compares examples with each other. Fix: normalise over the classes "
            "(dim=-1)"
        )
    ratio = whole / total if total else math.inf
    shown = f"{ratio:.6f}" if abs(ratio - 1.0) < 0.01 else f"{ratio:.4g}"  # 0.99962, not "1"
    head = f"loss_sum of {size} examples = {shown} x the sum of their single losses"
    weighted = sum(loss * c for loss, c in zip(singles, counts))
    if sum(counts) and _close(whole, weighted / sum(counts)) and len(set(counts)) > 1:
        return f"{head}: it returns a mean over targets, not a sum (reduction='sum' is the contract)"
    if _close(whole, total / size):
        return f"{head} (= 1/{size}): it returns a mean, not a sum (reduction='sum' is the contract)"
    return (
        f"{head}: it is not a sum over targets (the batch weighs its examples otherwise than each alone: a mean "
        "scaled back by a count other than the targets', such as every real token, or a batch statistic)"
    )


def objective_check(
    task: TaskData, model: torch.nn.Module, micro_batch: int, max_batches: int = 2, split: str = "train", **by_hand: int
) -> CheckResult:
    """``by_hand``: the other batch settings (accumulation, replicas) a loss may be divided by by hand."""
    size = max(4, int(micro_batch))
    examples = task.splits[split][: size * max_batches]
    items = [task.encode(e) for e in examples]
    batches = [batch for _, batch in micro_batches(task, items, size)][:max_batches]
    findings: list[Finding] = []
    warnings: list[Finding] = []
    total_loss, total_count, width, per_batch, outputs = 0.0, 0.0, None, [], []
    per_class: dict[int, list[float]] = {}  # class id -> loss per target of each probed example
    model.eval()
    for batch in batches:
        with torch.no_grad():
            output = task.forward(model, batch)
        outputs.append((output, batch))
        numbers = sum_contract(task, output, batch, None if loss_reads_logits(task, output, batch) else model)
        scores, grad, _ = output_gradient(task, output, batch, recompute=partial(task.forward, model, batch))
        width = int(scores.shape[-1])
        unpaired = positions_unlike_labels(batch.get("labels"), grad) or ordinal_head(task, output, batch)  # CTC, CORAL
        several_heads = len(trained_head_widths(task, output, batch)) > 1  # positions of one head are not the count
        trained = None if unpaired or several_heads else _trained(task, output, batch, grad, width, numbers["count"])
        per_batch.append(
            {k: numbers[k] for k in ("examples", "loss", "count")}
            | {
                "sum_single_losses": sum(numbers["single_losses"] or [float("nan")]),
                "sum_single_counts": sum(numbers["single_counts"] or [float("nan")]),
                "trained_positions": trained,
                "ctc_style": bool(unpaired),  # frames or thresholds, not the labels' classes: no ln(width) start
            }
        )
        total_loss, total_count = total_loss + numbers["loss"], total_count + numbers["count"]
        even = _at_even_logits(task, output, batch)  # the loss's own weights, not the model's
        losses_by_class(batch, even, per_class)
        findings += contract_findings(numbers, trained, even, skipped_class(task, batch, grad))
    details: dict[str, Any] = {"batches": per_batch, "output_width": width}
    findings += _read_apart(task, outputs) + one_positive_for_every_row(task, model, outputs, items[0])
    if total_count > 0 and total_loss < 0 and (class_ids(batches) or class_distributions(batches)):
        findings.append(Finding(negative_loss(total_loss / total_count, soft=not class_ids(batches))))
    elif (
        total_count > 0
        and width
        and width > 1
        and task.initial_loss_tolerance is not None
        and not regression(task, batches)
        and not any(b["ctc_style"] for b in per_batch)  # CTC sums over alignments; CORAL a BCE per threshold
        and not in_batch_scores(task, model, outputs[0], items[0])  # a contrastive row's classes: the batch's
    ):
        warnings += initial_loss_findings(task, outputs, total_loss / total_count, width, per_class, details)
    elif not total_count:
        findings.append(Finding("target_count is 0 on every probed batch: nothing would be trained"))
    findings += decision_boundary_findings(task, *outputs[0]) if outputs and not findings else []
    per_example = total_count / max(1, sum(b["examples"] for b in per_batch))
    findings += loss_scaled(task, outputs, details, per_example, {"micro_batch": int(micro_batch), **by_hand})
    warnings[:0] = inverted_positive_weights(task, outputs, partial(_positive_share, task, micro_batch))  # cause first
    soft, details["soft_targets"] = soft_target_findings(task, outputs)  # smoothed a second time by the loss?
    warnings += soft or flat_floor_findings(task, outputs)  # hard labels under a loss that barely falls
    ok = _sums_said(per_batch, size) + "; initial loss per target " + _initial_loss_said(task, details, batches)
    return summarise(STEP, findings, ok, details, warnings)


def _read_apart(task: TaskData, outputs: list) -> list[Finding]:
    """What predict, the loss's floor, the head it trains and the targets it is given say, each judged on the
    outputs as they are."""
    outside = binary_targets_outside(task, outputs)  # what a binary cross-entropy receives as targets
    found = (
        prediction_outside_the_loss(task, outputs),
        floorless_finding(task, outputs),
        other_head_finding(task, outputs),
        Finding(outside) if outside else None,
    )
    return [f for f in found if f]


def _positive_share(task: TaskData, micro_batch: int) -> torch.Tensor | None:
    """Each tag's share of positives over the first 256 training examples (multi-hot 0/1 labels), or None."""
    try:
        items = [task.encode(e) for e in task.splits["train"][:256]]
        labels = [b.get("labels") for _, b in micro_batches(task, items, max(4, int(micro_batch)))]
        if not labels or not all(torch.is_tensor(x) and x.is_floating_point() and x.dim() == 2 for x in labels):
            return None
        return torch.cat(labels).float().mean(0)
    except Exception:  # noqa: BLE001 - labels of another form: not judged
        return None


def _initial_loss_said(task: TaskData, details: dict[str, Any], batches: list[dict[str, Any]]) -> str:
    if "initial_loss_per_target" not in details:
        if not regression(task, batches):
            return "not compared (no class scores to compare with ln(outputs))"
        kind = "task kind " + repr(task.kind) if "regression" in str(task.kind).lower() else "float labels, values"
        return f"not compared (a regression: {kind})"
    said = f"{details['initial_loss_per_target']:.4g} vs {details['expected_from']} = {details['expected_initial_loss']:.4g}"
    if "even_logits_loss_per_target" in details:
        said += (
            f" (the fresh model's logits: with every logit 0 the loss is "
            f"{details['even_logits_loss_per_target']:.4g} per target)"
        )
    return said


def _sums_said(per_batch: list[dict[str, Any]], size: int) -> str:
    if all(b["sum_single_counts"] == b["sum_single_counts"] for b in per_batch):  # NaN: not cut into examples
        return f"loss_sum and target_count add up over single examples on {len(per_batch)} batch(es) of {size}"
    return (
        f"loss_sum and target_count not compared over single examples ({len(per_batch)} batch(es) of {size} "
        "whose label rows are not one per example)"
    )


def skipped_class(task: TaskData, batch: dict[str, Any], grad: torch.Tensor) -> str:
    """Where the loss leaves out examples (one class id each) all of one class that no trained example has:
    that class, named, with the likely cause; "" otherwise."""
    labels = batch.get("labels")
    if not torch.is_tensor(labels) or labels.dim() != 1 or labels.is_floating_point() or grad.shape[0] != len(labels):
        return ""
    reached = (grad != 0).reshape(len(labels), -1).any(-1).cpu()
    left, kept = set(labels[~reached].tolist()), set(labels[reached].tolist())
    if len(left) != 1 or left & kept:
        return ""
    (label,) = left
    names = list(task.class_names or [])
    named = f" ({names[label]!r})" if 0 <= label < len(names) else ""
    return (
        f"; every example it leaves out has label {label}{named}, and none it trains does: a loss that ignores that "
        f"class (cross_entropy(..., ignore_index={label}), copied from a language model's loss where {label} was the "
        "pad id)"
    )


def contract_findings(
    numbers: dict[str, Any], trained: int, even: dict[str, Any] | None = None, skipped: str = ""
) -> list[Finding]:
    """What one batch breaks of the contract: a loss that is not a sum, a count that is not a count or
    that counts positions the loss does not train (a count that is no whole number is a sum of example
    weights, a weighted mean's normaliser: only its adding up over examples is judged)."""
    findings = []
    split = numbers["single_losses"] is not None  # the batch's rows are its examples
    if split and numbers["examples"] > 1 and not _close(numbers["loss"], sum(numbers["single_losses"])):
        findings.append(Finding(loss_diagnosis(numbers)))
    if split and not _close(numbers["count"], sum(numbers["single_counts"])):
        findings.append(
            Finding(
                f"target_count of {numbers['examples']} examples = {numbers['count']:g}, "
                f"the sum of their single counts = {sum(numbers['single_counts']):g}: "
                "it is not a count over examples"
            )
        )
    elif not float(numbers["count"]).is_integer():  # a sum of example weights: does the loss apply them?
        findings += _weights_unapplied(even)
    elif trained and int(numbers["count"]) != trained and not _examples_as_targets(numbers, trained, even):
        findings.append(
            Finding(
                f"target_count says {numbers['count']:g} targets but loss_sum trains "
                f"{trained} positions "
                + (
                    "(does target_count count padding or ignored labels, or does loss_sum leave out real "
                    f"targets, e.g. masked by another sequence's mask?){skipped}"
                    if numbers["count"] > trained
                    else "(does loss_sum train padding or ignored labels that target_count leaves out?)"
                )
            )
        )
    return findings


def _examples_as_targets(numbers: dict[str, Any], trained: int, even: dict[str, Any] | None) -> bool:
    """A sequence-level loss: each example's loss the mean over its own positions, target_count one per
    example (every example weighs the same, however long: a choice of several SFT recipes). Fewer targets
    than trained positions, one per example, and with every logit 0 the same loss per example whatever its
    length; a per-token sum counted per example gives a longer example more (not this)."""
    singles = (even or {}).get("single_losses")
    if not singles or numbers["count"] >= trained or numbers.get("single_counts") is None:
        return False
    if any(count != 1 for count in numbers["single_counts"]) or len(singles) < 2:
        return False
    return max(singles) <= 1.01 * min(singles) and min(singles) > 0


def _weights_unapplied(even: dict[str, Any] | None) -> list[Finding]:
    """A target_count that sums example weights (no whole number) while loss_sum leaves them out: with every
    logit 0 each example's loss per counted target is the same (ln of the width) only when the loss weighs
    each example as its count does."""
    if even is None or not even.get("single_losses"):
        return []
    ratios = [loss / count for loss, count in zip(even["single_losses"], even["single_counts"]) if count > 0]
    if len(ratios) < 2 or max(ratios) <= 1.01 * min(ratios):
        return []
    return [
        Finding(
            f"target_count sums example weights (not a whole number) that loss_sum does not apply as it counts them: "
            f"with every logit 0, each example's loss per counted target ranges from {min(ratios):.4g} to "
            f"{max(ratios):.4g}, where a loss weighted as counted gives every example the same. Fix: weigh each "
            "example's loss by the weight target_count adds (loss_sum = sum of w * loss), or count whole targets"
        )
    ]


def _trained(
    task: TaskData, output: Any, batch: dict[str, Any], grad: torch.Tensor, width: int, declared: float
) -> int:
    """Targets the loss trains: at the fresh outputs, or, where that leaves some out, at random ones too."""
    trained = _trained_targets(batch, grad, width, declared)
    if trained < declared:  # a margin the fresh outputs already meet?
        trained = max(trained, _trained_from_other_outputs(task, output, batch, width, declared))
    return trained


OTHER_OUTPUTS = 8  # random outputs the loss's gradient is asked on, when the fresh model's leaves targets out


def _trained_from_other_outputs(task: TaskData, output: Any, batch: dict[str, Any], width: int, declared: float) -> int:
    """Examples (one label each) the loss trains at the fresh outputs or at any of a few random outputs of
    their shapes and scale: a hinge or triplet margin the fresh model already meets gives some examples no
    gradient there, which is the model's start, not targets the loss leaves out (those stay untrained
    whatever the outputs). 0 where labels are not one per example."""
    labels, named = batch.get("labels"), named_tensors(output)
    if not torch.is_tensor(labels) or labels.dim() != 1:
        return 0
    reached = torch.zeros(len(labels), dtype=torch.bool)
    for seed in range(OTHER_OUTPUTS):
        generator = torch.Generator().manual_seed(seed)
        other = {
            key: torch.randn(value.shape, generator=generator).to(value) * (3 * float(value.float().std()) + 1e-3)
            for key, value in (named or {"": output}).items()
            if value.numel() > 1
        }
        try:
            _, grad, _ = output_gradient(task, rebuilt(output, other) if named else other[""], batch)
        except Exception:  # noqa: BLE001 - outputs the loss cannot take: the fresh model's count stands
            return 0
        if grad.dim() < 1 or grad.shape[0] != len(labels):
            return 0
        reached |= (grad != 0).reshape(len(labels), -1).any(-1).cpu()
    return int(reached.sum())


def _trained_targets(batch: dict[str, Any], grad: torch.Tensor, width: int, declared: float) -> int:
    """Targets the loss trains: one per position for class ids (or one output). Floating-point labels of
    the output's own shape are counted either way a task may mean them: each element a target
    (multi-hot tags) when target_count says so, else each position (one soft distribution)."""
    labels = batch.get("labels")
    if torch.is_tensor(labels) and labels.is_floating_point() and labels.shape == grad.shape:
        elements = int((grad != 0).sum())
        return elements if declared == elements else int((grad != 0).any(-1).sum())
    if torch.is_tensor(labels) and labels.dim() >= 2 and width == 1 and labels.shape == grad.shape[:-1]:
        elements, rows = int((grad != 0).sum()), int((grad != 0).flatten(1).any(-1).sum())  # a score per candidate:
        return rows if declared == rows != elements else elements  # one ranking per row, when target_count says so
    if torch.is_tensor(labels) and labels.is_floating_point() and width > 1 and declared == int((grad != 0).sum()):
        return int(declared)  # several outputs per value target, each counted (quantiles: one per level)
    return int(pushed_classes(grad)[1].sum()) if width > 1 else int((grad != 0).any(-1).sum())


def _at_even_logits(task: TaskData, output: Any, batch: dict[str, Any]) -> dict[str, Any] | None:
    """The sum contract's numbers with every logit 0: what the loss itself gives each example when the model
    favours no class (a fresh model's own leaning, large logits from unscaled inputs, is not the loss's
    weighting); None when the output's logits cannot be replaced."""
    try:
        with torch.no_grad():
            return sum_contract(task, with_logits(output, torch.zeros_like(logits_of(output))), batch)
    except Exception:  # noqa: BLE001 - a loss that cannot take other logits: classes not compared
        return None
