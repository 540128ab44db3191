"""Step: which token (or class) is each counted position actually trained towards?

The loss's own gradient says it: ``loss_sum`` is back-propagated to the model's output (made a
leaf, so the model is untouched), and at every trained position the class with the most
negative gradient is the one the loss pushes up (cross-entropy: softmax - one-hot). That class is
compared with the declared target under the task's convention (``TaskData.convention``):

- ``next_token``: output t must be trained towards input token t+1, whatever the label layout;
  a shift applied twice shows as t+2, no shift at all as t+0 (the model learns to copy);
- ``same_position``: output t (row b) must be trained towards its own label; a wrong class
  mapping in the loss shows as a constant id offset or a permutation, named by class.

It works for any labelling convention and any loss that pushes one class up, because it reads
what the loss does rather than what the labels say.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

import torch

from pilot.checks.ctc_blank import ctc_blank_verdict
from pilot.checks.distillation import distillation_verdict
from pilot.checks.label_kinds import ordinal_head
from pilot.checks.loss_optimum import minimum_ranks_the_labels
from pilot.checks.loss_probe import (
    counted_label_mask,
    input_ids_of,
    micro_batches,
    output_gradient,
    paired_outputs,
    positions_unlike_labels,
    pushed_classes,
    sequence_first,
)
from pilot.checks.lower_is_better import lower_is_better_verdict
from pilot.checks.result import CheckResult
from pilot.data.task import NEXT_TOKEN, TaskData

STEP = "alignment"
OFFSETS = (-1, 0, 1, 2, 3)  # input offsets tried for a next-token task (declared: +1)
REQUIRED_SHARE = 0.99  # share of trained positions that must match the declared target


def _offset_text(offset: int) -> str:
    return "t" if offset == 0 else f"t{offset:+d}"


def _shifted_reference(reference: torch.Tensor, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """reference[b, t + offset] at every (b, t), and where that position exists."""
    shifted = torch.full_like(reference, -1)
    exists = torch.zeros_like(reference, dtype=torch.bool)
    width = reference.shape[1]
    if abs(offset) < width:
        if offset >= 0:
            shifted[:, : width - offset] = reference[:, offset:]
            exists[:, : width - offset] = True
        else:
            shifted[:, -offset:] = reference[:, : width + offset]
            exists[:, -offset:] = True
    return shifted, exists


def _no_class_columns(task: TaskData, output: Any, batch: dict[str, Any], scores: torch.Tensor) -> dict | None:
    """An output whose columns are no class scores, said as ``probe`` returns it: an ordinal head's K-1
    cumulative logits (thresholds), or two outputs of one shape the loss compares (a siamese pair's
    embeddings, not as wide as the declared classes), or an output of more positions than the labels have
    (a triplet's three embeddings per row, one label); None otherwise."""
    labels = batch["labels"]
    if scores.dim() - 1 > max(labels.dim(), 1):
        return {
            "regression": False,
            "paired": f"an output of shape {list(scores.shape)} for labels of shape {list(labels.shape)}",
        }
    if ordinal_head(task, output, batch):
        return {"regression": False, "ordinal": int(scores.shape[-1])}
    names = task.names()
    if names and scores.shape[-1] != len(names) and (paired := paired_outputs(task, output, batch)):
        return {"regression": False, "paired": paired}
    return None


def _not_judged(task: TaskData, found: dict[str, Any]) -> str | None:
    """Why an output is not judged class by class (``_no_class_columns``, CTC's frames), or None."""
    if "ordinal" in found:
        return (
            f"not judged: an ordinal head of {found['ordinal']} cumulative logits, thresholds, not one score per class"
        )
    if "unpaired" in found:
        return f"not judged: {found['unpaired']} (CTC-style), so no output position stands for one label"
    if "paired" in found:
        return (
            f"not judged: the loss reads {found['paired']}, not the {len(task.names())} classes' scores: "
            "representations it compares with each other (a siamese or two-tower loss), no column per class"
        )
    return None


def probe(task: TaskData, model: torch.nn.Module, batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Trained positions, the class pushed up there, and the references to compare it with."""
    pushed_all, reference_all, pulled_all, by_offset, soft = [], [], [], {}, {}
    trained_count = declared_positions = 0
    sequence, found_layout = False, ""
    model.eval()
    for batch in batches:
        with torch.no_grad():
            output = task.forward(model, batch)
        if torch.is_tensor(batch["labels"]) and batch["labels"].is_floating_point():
            return {"regression": True, "float_labels": True}  # soft or multi-hot targets: no class id per position
        scores, grad, _ = output_gradient(task, output, batch, recompute=partial(task.forward, model, batch))
        if scores.shape[-1] < 2:
            return {"regression": True}
        if (other := _no_class_columns(task, output, batch, scores)) is not None:
            return other
        pushed, trained = pushed_classes(grad)
        labels = batch["labels"]
        found_layout = found_layout or _layout_said(output, labels)
        if unpaired := positions_unlike_labels(labels, grad):  # CTC-style: frames, not label positions
            return {"regression": False, "unpaired": unpaired}
        sequence = pushed.dim() >= 2
        declared_positions += int(counted_label_mask(task, labels).sum())
        trained_count += int(trained.sum())
        pushed_all.append(pushed[trained])
        if not sequence:  # one class per row: its own label; and any soft target beside it (a teacher's logits)
            reference_all.append(labels.reshape(pushed.shape)[trained])
            pulled_all.append(grad.argmax(dim=-1)[trained])  # the class pushed down most: a distance's target
            for key, value in batch.items():
                if (
                    key != "labels"
                    and torch.is_tensor(value)
                    and value.is_floating_point()
                    and value.shape == scores.shape
                ):
                    soft.setdefault(key, []).append(value.argmax(-1)[trained])
            continue
        ids = input_ids_of(batch)
        next_token = task.convention == NEXT_TOKEN and ids is not None
        reference = ids if next_token else labels  # input token t+1, or the label at t
        for offset in OFFSETS:
            shifted, exists = _shifted_reference(reference, offset)
            by_offset.setdefault(offset, []).append(torch.where(exists, shifted, -1)[trained])
        reference_all.append(_shifted_reference(reference, 1 if next_token else 0)[0][trained])
    empty = torch.empty(0, dtype=torch.long)
    result: dict[str, Any] = {"layout": found_layout} if found_layout else {}
    result |= {
        "regression": False,
        "sequence": sequence,
        "trained": trained_count,
        "declared_positions": declared_positions,
        "pushed": torch.cat(pushed_all) if pushed_all else empty,
        "reference": torch.cat(reference_all) if reference_all else empty,
    }
    if sequence:
        result["by_offset"] = {k: torch.cat(v) for k, v in by_offset.items()}
    else:
        result["soft"] = {k: torch.cat(v) for k, v in soft.items()}
        result["pulled"] = torch.cat(pulled_all) if pulled_all else empty
    return result


def _layout_said(output: Any, labels: Any) -> str:
    """A sequence-first output, said beside a failure: the loss may pair its positions with other rows'."""
    if not sequence_first(output, labels):
        return ""
    return (
        f"; the output is sequence-first, {list(output.shape)} beside labels {list(labels.shape)}: a loss that "
        "views or flattens it as [B, T, C] pairs positions with other rows' labels (transpose(0, 1) first, or "
        "batch_first=True)"
    )


def _name(task: TaskData, class_id: int) -> str:
    names = task.names()
    if 0 <= class_id < len(names):
        return f"'{names[class_id]}' ({class_id})"
    if task.decode_tokens is not None and class_id >= 0:
        return f"{''.join(task.decode_tokens([class_id]))!r} ({class_id})"
    return str(class_id)


def class_mapping_text(task: TaskData, pushed: torch.Tensor, reference: torch.Tensor) -> str:
    """How the trained class relates to the declared one: a constant id offset, or a mapping."""
    differences = Counter((pushed - reference).tolist())
    offset, hits = differences.most_common(1)[0]
    if offset != 0 and hits >= 0.9 * len(pushed):
        sign = "+" if offset > 0 else "-"
        return f"trained towards class id target {sign} {abs(offset)} at {hits} of {len(pushed)} positions"
    pairs = Counter(zip(reference.tolist(), pushed.tolist()))
    shown = [f"{_name(task, r)} -> {_name(task, p)}" for (r, p), _ in pairs.most_common() if r != p][:4]
    matching = int((pushed == reference).sum())
    return (
        f"trained towards the declared target at only {matching} of {len(pushed)} positions; "
        f"the loss pushes up instead: {', '.join(shown)}"
    )


def alignment_check(
    task: TaskData, model: torch.nn.Module, micro_batch: int, max_batches: int = 3, split: str = "train"
) -> CheckResult:
    """Fail when the loss trains counted positions towards anything but the declared target."""
    examples = task.splits[split][: max(8, int(micro_batch) * max_batches)]
    items = [task.encode(e) for e in examples]
    batches = [batch for _, batch in micro_batches(task, items, micro_batch)]
    found = probe(task, model, batches)
    convention = task.convention
    details: dict[str, Any] = dict(convention=convention, labels_shifted=task.labels_shifted, batches=len(batches))
    details["examples"] = len(items)
    if found.get("float_labels"):
        reason = "labels are floating point (soft or multi-hot targets): no class id per position to probe"
        return CheckResult(STEP, "pass", reason, [], details)
    if found["regression"]:
        return CheckResult(STEP, "pass", "one output per position (a regression?): no class to probe", [], details)
    if "unpaired" in found and (blank := ctc_blank_verdict(task, model, batches, details)) is not None:
        return blank
    if (reason := _not_judged(task, found)) is not None:
        return CheckResult(STEP, "pass", reason, [], details)
    pushed, reference, trained = found["pushed"], found["reference"], found["trained"]
    details.update(trained_positions=trained, counted_by_labels=found["declared_positions"])
    if trained == 0:
        return CheckResult(
            STEP,
            "fail",
            "loss_sum has no gradient on the model's output: nothing is "
            "trained (is the output detached, or every label ignored?)",
            [],
            details,
        )
    matching = int((pushed == reference).sum())
    details["matching_declared"] = matching
    declared_text = "the next token, t+1" if convention == NEXT_TOKEN and found["sequence"] else "its own label"
    if matching >= REQUIRED_SHARE * trained:
        return CheckResult(
            STEP,
            "pass",
            f"the loss trains {matching} of {trained} positions towards the "
            f"declared target ({declared_text}; {convention}"
            f"{', labels shifted in collate' if task.labels_shifted else ''})",
            [],
            details,
        )
    if found["sequence"] and convention == NEXT_TOKEN and "by_offset" in found:
        shifted = _wrong_shift(found, trained, declared_text, details)
        if shifted is not None:
            return shifted
    if (distilled := distillation_verdict(task, model, batches[0], found, split, details)) is not None:
        return distilled
    if (lowest := lower_is_better_verdict(task, model, batches, found, details)) is not None:
        return lowest
    if not found["sequence"] and (ranked := minimum_ranks_the_labels(task, model, batches, REQUIRED_SHARE)):
        details["loss_minimum_ranks_label"] = ranked
        said = f"{class_mapping_text(task, pushed, reference)} at the fresh model's outputs, but the loss's minimum"
        return CheckResult(STEP, "pass", f"{said} {_MINIMUM_SAID.format(*ranked)}", [], details)
    said = class_mapping_text(task, pushed, reference) + f" (declared: {declared_text})" + found.get("layout", "")
    return CheckResult(STEP, "fail", said, [], details)


_MINIMUM_SAID = (
    "over the scores ranks the label first at {} of {} examples (a loss weighing the classes inside a smoothed "
    "target leans so from a biased start): trained towards its own label"
)


def _wrong_shift(
    found: dict[str, Any], trained: int, declared_text: str, details: dict[str, Any]
) -> CheckResult | None:
    """A next-token task trained towards another input offset at most positions: the labels shifted by the
    wrong amount (the share per offset goes into ``details``); None when no offset explains it."""
    pushed = found["pushed"]
    shares = {k: int((pushed == ref).sum()) for k, ref in found["by_offset"].items()}
    details["matches_by_offset"] = shares
    best = max(shares, key=shares.get)
    if best != 1 and shares[best] >= 0.5 * trained:
        why = {
            0: "labels not shifted: each position is trained to copy its own input token",
            2: "labels shifted twice (in collate and again in loss_sum, or by a transformers model given the labels: it shifts them itself?)",
        }.get(best, "labels shifted by the wrong amount")
        return CheckResult(
            STEP,
            "fail",
            f"trained towards token {_offset_text(best)} at {shares[best]} of "
            f"{trained} positions, declared {declared_text}: {why}",
            [],
            details,
        )
    return None
