"""Inspect's comparisons on a fresh model's outputs (evaluation mode, no gradient), each judging what the
data checks cannot see: does the model get each batch key under its own name, does it read the padding (of a
batch, of scores over the batch, or one an example brings with it), do real tokens read the embedding's padding row, is a next-token model causal, does forward read
the labels or a copy of them, do packed documents read each other, does it read the context at all. Each
adds its verdict to inspect's result (``with_comparison``) and its numbers to the details."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.argument_keys import argument_findings
from pilot.checks.batch_mixing import batch_mixing_findings
from pilot.checks.batch_padding import batch_padding_findings
from pilot.checks.causality import causality_findings, context_findings
from pilot.checks.copied_labels import copied_label_findings
from pilot.checks.decoder_start import decoder_start_findings
from pilot.checks.label_reading import label_reading_findings
from pilot.checks.loss_alone import loss_alone_findings
from pilot.checks.own_padding import own_padding_findings
from pilot.checks.packed_documents import packed_documents_findings
from pilot.checks.padding import padding_findings, with_comparison
from pilot.checks.padding_row import padding_row_findings
from pilot.checks.result import CheckResult
from pilot.checks.tied_targets import tied_target_findings
from pilot.data.task import TaskData
from pilot.errors import PilotError, error_line


def _compared(comparison, *args) -> tuple[list, dict[str, Any]]:
    """A comparison on the model's outputs, or, where the model cannot run what it compares (one example
    alone: BatchNorm normalising by the batch in eval mode cannot), not judged with the error in its
    details: the data checks' verdict stands (``smallest_micro_batch`` and ``eval_determinism`` judge
    the model at the batch sizes the run uses)."""
    try:
        return comparison(*args)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception as error:  # noqa: BLE001 - said in the details, not raised over inspect's data checks
        return [], {"judged": False, "model_crashed": error_line(error)}


def with_model_comparisons(
    result: CheckResult, task: TaskData, model: torch.nn.Module, encoded: dict[str, list], micro_batch: int
) -> CheckResult:
    """Inspect's result with every comparison on the model's outputs (the first training examples; the
    padding examples bring with them: the first of every split)."""
    train = encoded["train"]
    result = with_comparison(result, *_compared(argument_findings, task, model, train), "arguments")
    padding, details = _compared(padding_findings, task, model, train, micro_batch)  # alike outputs: a warn
    result = with_comparison(result, padding, details, "padding", "warn" if details.get("outputs_alike") else "fail")
    if not padding:  # scores over the batch ([B, B] in-batch negatives): the padding alone changed
        padding, details = _compared(batch_padding_findings, task, model, train, micro_batch)
        result = with_comparison(result, padding, details, "batch_padding")
    if not padding:  # padding an example holds alone (a split tokenised padded by another script)
        padding, details = _compared(own_padding_findings, task, model, encoded)
        result = with_comparison(result, padding, details, "own_padding")
    if not padding:  # a model reading the padding gives other outputs in a batch too: said once, above
        mixing, details = _compared(batch_mixing_findings, task, model, train, micro_batch)
        result = with_comparison(result, mixing, details, "batch_mixing")
        if not mixing:  # the outputs are each example's own: is its loss too?
            result = with_comparison(
                result, *_compared(loss_alone_findings, task, model, train, micro_batch), "loss_alone"
            )
    start = _compared(decoder_start_findings, task, model, train, micro_batch)  # the model's own start token?
    result = with_comparison(result, *start, "decoder_start", "warn")
    row = _compared(padding_row_findings, task, model, train, micro_batch)  # real tokens on a frozen row
    result = with_comparison(result, *row, "padding_row", "warn")
    result = with_comparison(result, *_compared(causality_findings, task, model, train), name="causality")
    result = with_comparison(result, *_compared(label_reading_findings, task, model, train), "label_reading")
    copied, details = _compared(copied_label_findings, task, model, train)  # its own ids: a warn (denoising)
    result = with_comparison(result, copied, details, "copied_labels", "warn" if details.get("main_input") else "fail")
    tied = _compared(tied_target_findings, task, model, train, micro_batch)
    result = with_comparison(result, *tied, "tied_targets", "warn")
    packed = _compared(packed_documents_findings, task, model, train)
    result = with_comparison(result, *packed, "packed_documents", "warn")
    context, details = _compared(context_findings, task, model, train)  # fail where attention exists
    result = with_comparison(
        result, context, details, "context", "fail" if details.get("attention_modules") else "warn"
    )
    return result
