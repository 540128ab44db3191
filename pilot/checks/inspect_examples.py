"""Step 1: show the exact tensors that reach the loss, and flag what would train the wrong task.

Every task: every example of every split is collated in micro-batches as training collates
them, and each row is checked (``pilot.checks.collated``): what the loss counts against the
declared target, padding never predicted, the row equal to the example collated alone.
Generation: the tokens the loss predicts are the target the task *means*
(``TaskData.expected_targets``): a shorter target was truncated, a longer one
counts instruction tokens, an empty one trains nothing.
Classification: label ids (read from the collated ``labels``) within [0, classes), the model
head's width equal to the number of classes and, from the declared class names
(``TaskData.class_names`` + ``TaskData.raw_label``): one class-name -> id encoding shared by
every split, no id standing for two classes, ids named as the mapping names them, and every
class present in every split.
The shown examples are drawn from the same collated rows as the check.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from pilot.checks.answer_in_prompt import answer_in_prompt_findings
from pilot.checks.answer_start import answer_start_findings
from pilot.checks.class_names import alike_name_findings, missing_classes, model_label_findings, name_findings
from pilot.checks.collated import RowView, check_collated, split_statistics
from pilot.checks.copied_targets import copied_target_findings
from pilot.checks.doubled_marker import doubled_marker_findings
from pilot.checks.erased_evidence import erased_evidence_findings
from pilot.checks.field_end import field_end_findings
from pilot.checks.hidden_tokens import hidden_token_findings
from pilot.checks.ignore_value import ignore_value_findings
from pilot.checks.image_layout import image_layout_findings
from pilot.checks.label_kinds import ordinal_head
from pilot.checks.loss_probe import SEQ2SEQ, input_ids_of, real_mask
from pilot.checks.model_comparisons import with_model_comparisons
from pilot.checks.padding import with_comparison
from pilot.checks.position_labels import position_label_findings
from pilot.checks.result import CheckResult, Finding, summarise
from pilot.checks.same_inputs import same_input_findings
from pilot.checks.span_labels import span_label_findings
from pilot.checks.stop_token import stop_token_findings
from pilot.checks.tag_columns import tag_column_findings
from pilot.checks.tag_offset import tag_offset_findings
from pilot.checks.tag_pieces import tag_pieces_findings
from pilot.checks.target_in_source import target_in_source_findings
from pilot.checks.teacher_forcing import label_padding_findings, teacher_forcing_findings
from pilot.checks.truncated_labels import truncated_label_findings
from pilot.checks.untrained_labels import LossPositions
from pilot.data.task import TaskData, logits_of

STEP = "inspect"
RANDOM_NOTE = "; collate is random (two calls differ): rows not compared with the example alone"


# ----------------------------------------------------------------------------- generation
def loss_tokens(view: RowView) -> list[int]:
    """Token ids the loss is asked to predict for one collated row."""
    return list(view.values)


def render_generation(task: TaskData, view: RowView) -> dict[str, str]:
    """Three aligned lines from the collated row: tokens, ^ under each token the loss predicts, mask."""
    batch, row = view.batch, view.row
    ids = input_ids_of(batch)[row].tolist()
    mask = real_mask(task, batch)[row].tolist()
    shown = task.decode_tokens(ids) if task.decode_tokens else [str(t) for t in ids]
    predicted = set(view.predicted)
    marks = ["^" if position in predicted else " " for position in range(len(ids))]
    widths = [max(1, len(s)) for s in shown]
    return {
        "tokens": "".join(s.ljust(w) for s, w in zip(shown, widths)),
        "loss": "".join(m.ljust(w) for m, w in zip(marks, widths)),
        "mask": "".join(str(int(m)).ljust(w) for m, w in zip(mask, widths)),
    }


def show_generation(task: TaskData, view: RowView) -> dict[str, Any]:
    """examples.txt's block for one row: every count and line from the same collated tensors."""
    mask = real_mask(task, view.batch)[view.row]
    real, width = int(mask.sum()), int(mask.shape[0])
    pads = [p for p in range(width) if not bool(mask[p])]
    side = "none" if not pads else "left" if pads[-1] < width - 1 else "right" if pads[0] > 0 else "both"
    values = loss_tokens(view)
    return {
        "split": view.split,
        "index": view.example.index,
        **render_generation(task, view),
        "length": real,
        "padding": f"{width - real} pad token(s)" + (f" on the {side}" if pads else ""),
        "truncation": _truncation(task, view.item),
        "loss_tokens": len(values),
        "target": "".join(task.decode_tokens(values)) if task.decode_tokens else str(values),
    }


def _truncation(task: TaskData, item: dict[str, Any]) -> str:
    """What encode cut from this example, as far as it says (``truncated_tokens`` in the item, the
    side in ``info["truncation_side"]``)."""
    if "truncated_tokens" not in item:
        return "truncation not reported by encode (no truncated_tokens in what it returns)"
    cut = int(item["truncated_tokens"])
    if not cut:
        return "nothing cut by encode"
    side = task.info.get("truncation_side")
    where = f" on the {side}" if side in ("left", "right") else ""
    return f"{cut} token(s) cut{where} by encode, {int(item.get('truncated_target_tokens', 0))} of them target"


def _targets_seen(task: TaskData) -> str:
    """What the loss matched of expected_targets: the answer alone only where the task masks its prompt."""
    return "loss sees exactly " + {
        True: "the answer tokens",
        False: "the declared targets, the prompt's tokens and the answer's (mask_instruction=false)",
    }.get(task.info.get("mask_instruction"), "the tokens the task declares as targets (expected_targets)")


def inspect_generation(
    task: TaskData, encoded: dict[str, list[dict]], n_show: int, micro_batch: int, model: torch.nn.Module | None = None
) -> tuple[CheckResult, list[dict[str, Any]]]:
    positions = LossPositions(task, model)  # with a model: rows judged by what their loss trains
    findings, views, random = check_collated(task, encoded, micro_batch, positions)
    stats = split_statistics(task, views, findings)
    train_rows = [v for v in views if v.split == "train" and v.aligned][:n_show]
    shown = (
        [show_generation(task, v) for v in train_rows]
        if train_rows and input_ids_of(train_rows[0].batch) is not None
        else [show_fields(v) for v in train_rows]
    )
    train_stats = stats.get("train", {})
    seen = (
        _targets_seen(task)
        if task.expected_targets is not None
        else "every example has targets in the loss (no expected_targets declared to compare with)"
    )
    truncated = train_stats.get("share_truncated")
    cut = (
        f"{truncated:.1%} of train truncated without cutting a target"
        if truncated is not None
        else "no target cut (how many examples encode truncated it does not report)"
    )
    ok = (
        f"{seen} of all {len(views)} examples, collated in micro-batches "
        f"of {micro_batch}; {cut}, {train_stats.get('share_padding', 0):.1%} padding"
    )
    ok += RANDOM_NOTE if random else ""
    if packed := sum(not v.aligned for v in views):
        ok = (
            f"{packed} of {len(views)} examples collated into rows that hold several examples each (fewer label rows "
            "than examples: packed), so their loss positions are not compared with each example's target"
        )
    result = summarise(STEP, findings, ok, {"per_split": stats, "micro_batch": micro_batch, "collate_random": random})
    return positions.judged(result), shown


# ----------------------------------------------------------------------------- classification
def inspect_classification(
    task: TaskData, encoded: dict[str, list[dict]], n_show: int, model: torch.nn.Module | None, micro_batch: int = 1
) -> tuple[CheckResult, list[dict]]:
    findings, views, random = check_collated(task, encoded, micro_batch)
    class_names = task.names()
    num_classes = int(task.info.get("num_classes", len(class_names)))
    histograms: dict[str, dict[int, int]] = {}
    for split in task.splits:
        histograms[split] = dict(sorted(Counter(v.values[0] for v in views if v.split == split and v.values).items()))
    for view in views:
        if view.values and not 0 <= view.values[0] < num_classes:
            findings.append(
                Finding(f"label {view.values[0]} outside [0, {num_classes})", view.split, view.example.index)
            )
    by_name = any(task.raw_class_name(v.example) is not None for v in views)
    if by_name:
        findings += name_findings(task, views, class_names)
    missing, warnings = missing_classes(task, views, class_names, num_classes, by_name)
    findings += missing
    width = None
    if model is not None and encoded["train"]:
        width, ordinal = head_width(task, encoded, model)
        findings += [] if ordinal else head_width_findings(width, num_classes)
        findings += model_label_findings(model, class_names)
    shown = [
        show_classified(task, view, class_names)
        for view in [v for v in views if v.split == "train" and v.aligned][:n_show]
    ]
    details = {
        "mapping": {i: n for i, n in enumerate(class_names)},
        "label_histogram": histograms,
        "checked_by_name": by_name,
        "micro_batch": micro_batch,
        "collate_random": random,
    }
    names_note = (
        "every class name in its declared id"
        if by_name
        else "by-name checks skipped: the task declares no raw class name (TaskData.raw_label)"
    )
    ok = (
        f"{num_classes} classes, one encoding across splits, labels in range, {_head_note(width, num_classes)}; "
        f"{names_note}; {len(views)} examples collated in micro-batches of {micro_batch}"
        + (RANDOM_NOTE if random else "")
    )
    return summarise(STEP, findings, ok, details, warnings), shown


def binary_logit(width: int, classes: int) -> bool:
    """Two classes scored by one logit (the positive class's, BCE-with-logits): the standard binary head."""
    return width == 1 and classes == 2


def head_width(task: TaskData, encoded: dict[str, list[dict]], model: torch.nn.Module) -> tuple[int, bool]:
    """The model's output width, on two training examples, and whether it is an ordinal head (K-1 cumulative
    logits: ``label_kinds.ordinal_head``), whose width is not the number of classes by design."""
    batch = task.collate(encoded["train"][:2])
    with torch.no_grad():
        output = task.forward(model, batch)
    return int(logits_of(output).shape[-1]), ordinal_head(task, output, batch)


def _head_note(width: int | None, num_classes: int) -> str:
    if width is None:
        return "the head's width not examined (no model given)"
    if binary_logit(width, num_classes):
        return "a head of 1 output (one logit for 2 classes)"
    return f"a head of {width} outputs"


def head_width_findings(width: int, num_classes: int) -> list[Finding]:
    """The model's output width against the number of classes."""
    if width != num_classes and not binary_logit(width, num_classes):
        return [
            Finding(
                f"model head has {width} outputs but the data has {num_classes} classes",
                detail=(
                    f"the loss still computes, but outputs {num_classes}-{width - 1} are trained towards no class"
                    if width > num_classes
                    else f"the loss cannot score a label >= {width}"
                ),
            )
        ]
    return []


def show_classified(task: TaskData, view: RowView, class_names: list[str]) -> dict[str, Any]:
    """examples.txt's block for a classified row: its label, class name, raw label and input's range."""
    label = view.values[0] if view.values else -1
    return {
        "split": "train",
        "index": view.example.index,
        "label": label,
        "class_name": class_names[label] if 0 <= label < len(class_names) else "?",
        "raw_label": task.raw_class_name(view.example),
        "input": _input_shown(task, view),
    }


def _input_shown(task: TaskData, view: RowView) -> str:
    """A feature tensor's shape and range, or a text's real tokens (decoded when the task can)."""
    inputs = view.batch.get("inputs")
    if torch.is_tensor(inputs):
        row = inputs[view.row]
        return f"tensor {tuple(row.shape)}, min {float(row.min()):.3g}, max {float(row.max()):.3g}"
    ids = view.batch.get("input_ids")
    if not torch.is_tensor(ids):
        return ""
    row, real = ids[view.row], view.batch.get("attention_mask")
    tokens = [int(t) for t in (row[real[view.row].bool()] if torch.is_tensor(real) else row)]
    return "".join(task.decode_tokens(tokens)) if task.decode_tokens is not None else f"token ids {tokens}"


# ----------------------------------------------------------------------------- any task
def show_fields(view: RowView) -> dict[str, Any]:
    """examples.txt's block for a row without token ids: the shape or value of each key."""
    return {
        "split": view.split,
        "index": view.example.index,
        "fields": {
            k: (tuple(v[view.row].shape) if torch.is_tensor(v) and v.dim() > 0 else v) for k, v in view.batch.items()
        },
    }


def inspect_generic(
    task: TaskData,
    encoded: dict[str, list[dict]],
    n_show: int,
    micro_batch: int = 1,
    model: torch.nn.Module | None = None,
) -> tuple[CheckResult, list[dict]]:
    positions = LossPositions(task, model)  # with a model: rows judged by what their loss trains
    findings, views, random = check_collated(task, encoded, micro_batch, positions)
    class_names = task.names()  # a task of its own kind with one class id per example and names declared
    one_id_each = views and all(len(v.values) == 1 and isinstance(v.values[0], int) for v in views if v.values)
    by_name = bool(class_names and one_id_each and task.raw_class_name(views[0].example) is not None)
    warnings: list[Finding] = []
    if by_name:  # as for a classification: each id under its name, and every class in training
        findings += name_findings(task, views, class_names)
        missing, warnings = missing_classes(task, views, class_names, len(class_names), by_name)
        findings += missing
    shown = [show_fields(view) for view in [v for v in views if v.split == "train"][:n_show]]
    named = " and each class id under its declared name" if by_name else ""
    ok = (
        f"every example has a target and collates as it encodes{named} (task kind '{task.kind}': the row checks "
        "of any task; the generation and classification views are for those kinds)" + (RANDOM_NOTE if random else "")
    )
    result = summarise(STEP, findings, ok, {"micro_batch": micro_batch, "collate_random": random}, warnings)
    return positions.judged(result), shown


def _float_labels(task: TaskData, encoded: dict[str, list[dict]]) -> bool:
    """Soft or multi-hot labels (probabilities per class): the class-id checks do not apply."""
    items = encoded.get("train", [])[:2]
    labels = task.collate(items).get("labels") if items else None
    return torch.is_tensor(labels) and labels.is_floating_point()


def inspect_task(
    task: TaskData, n_show: int, micro_batch: int, model: torch.nn.Module | None = None
) -> tuple[CheckResult, list[dict[str, Any]]]:
    encoded = {split: task.encoded(split) for split in task.splits}
    if task.kind == "generation":
        result, shown = inspect_generation(task, encoded, n_show, micro_batch, model)
    elif task.kind == "classification" and not _float_labels(task, encoded):
        result, shown = inspect_classification(task, encoded, n_show, model, micro_batch)
    else:
        result, shown = inspect_generic(task, encoded, n_show, micro_batch, model)
    result = _causes_first(result, task, encoded, model)
    if task.kind not in ("generation", "classification"):  # a tagger's labels against their tokens
        result = with_comparison(
            result, *_read(tag_offset_findings, task, encoded.get("train", [])), "tag_offset", "warn"
        )
        result = with_comparison(result, *tag_pieces_findings(task, encoded.get("train", [])), "tag_pieces", "warn")
    if task.kind in ("generation", SEQ2SEQ):  # answers trained after a prompt, or decoder targets: a stop token?
        result = with_comparison(result, *stop_token_findings(task, encoded.get("train", [])), "stop_token", "warn")
    if task.kind == "generation":
        result = with_comparison(result, *answer_start_findings(task, encoded.get("train", [])), "answer_start", "warn")
    found = _read(truncated_label_findings, task, encoded.get("train", []))  # float targets collated as long
    result = with_comparison(result, *found, "truncated_labels", "fail")
    found = _read(copied_target_findings, task, encoded.get("train", []), micro_batch)  # labels after masking
    result = with_comparison(result, *found, "copied_targets", "fail")
    if encoded.get("train"):  # multi-hot labels: each column one tag in every split
        result = with_comparison(result, *_read(tag_column_findings, task, encoded), "tag_columns")
    # a text field whose end never reaches the model (a prompt sliced one token short)
    result = with_comparison(result, *field_end_findings(task, encoded.get("train", [])), "field_end", "warn")
    result = with_comparison(result, *alike_name_findings(task), "alike_class_names", "warn")  # " politics"
    found = _read(image_layout_findings, task, encoded.get("train", []))  # HWC read with .view(3, H, W)
    result = with_comparison(result, *found, "image_layout", "warn")
    found = _read(span_label_findings, task, encoded.get("train", []))  # answer spans beside their answers
    result = with_comparison(result, *found, "span_labels")
    found = _read(doubled_marker_findings, task, encoded.get("train", []))  # <bos><bos>: a marker added twice
    result = with_comparison(result, *found, "doubled_marker", "warn")
    found = _read(same_input_findings, task, encoded.get("train", []))  # a source read under a wrong key
    result = with_comparison(result, *found, "same_inputs")
    if task.kind == SEQ2SEQ:  # the answer in the encoder's input: copied, not learned
        result = with_comparison(
            result, *target_in_source_findings(task, encoded.get("train", [])), "target_in_source", "warn"
        )
    if task.kind == "generation":  # a demonstration filled from the row itself: copied, not learned
        found = _read(answer_in_prompt_findings, task, encoded.get("train", []))
        result = with_comparison(result, *found, "answer_in_prompt", "warn")
    if encoded.get("train"):  # real tokens marked as padding: never attended to
        result = with_comparison(
            result, *_read(hidden_token_findings, task, encoded["train"], micro_batch), "hidden_tokens", "warn"
        )
        found = _read(erased_evidence_findings, task, encoded["train"], micro_batch)  # the label's evidence
        result = with_comparison(result, *found, "erased_evidence", "warn")  # normalised away by encode
    for probe in (teacher_forcing_findings, label_padding_findings) if encoded.get("train") else ():
        name = probe.__name__.removesuffix("_findings")  # a decoder's inputs: the target so far? its labels?
        result = with_comparison(result, *probe(task, encoded["train"], micro_batch), name)
    if model is not None and encoded.get("train"):
        result = with_model_comparisons(result, task, model, encoded, micro_batch)
    return result, shown


def _causes_first(
    result: CheckResult, task: TaskData, encoded: dict[str, list[dict]], model: torch.nn.Module | None
) -> CheckResult:
    """Inspect's result with label values that no loss can mean named first, the cause of every finding
    about counted positions: a negative ignore value other than -100, positions past the sequence."""
    train = encoded.get("train", [])
    causes = {}  # the last one found is named first
    if model is not None:  # an output that scores the sequence's positions: labels past it
        causes["position_labels"] = _read(position_label_findings, task, model, train)
    causes["ignore_value"] = ignore_value_findings(task, train)
    for name, (found, counted) in causes.items():
        if found:
            result = CheckResult(STEP, "fail", str(found[0]), found + result.findings, result.details)
            result.details[name] = counted
    return result


def _read(reader, *args) -> tuple[list, dict[str, Any]]:
    """A warning read from the data alone, or, where the task's data is of a shape it does not expect, not
    judged (the error in its details): inspect's own verdict stands."""
    try:
        return reader(*args)
    except Exception as error:  # noqa: BLE001 - said in the details, never a crash of inspect
        return [], {"judged": False, "error": f"{type(error).__name__}: {error}"[:300]}
