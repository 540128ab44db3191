"""Part of ``inspect``: does the model read the padding? A row of a padded micro-batch must give, at
its real positions, the output it gives collated alone (no padding). Inspect's tensor checks see
only what the batch holds; a model that ignores ``attention_mask`` (left padding: every position
attends to the pads before it; a bidirectional encoder: to the pads after it), or absolute
positions counted from the padding, trains on rows that are not the examples, and no loss or
label check can see it.

On a fresh model in evaluation mode, without gradient, in float32: the first micro-batches of the
training split (collated as training collates them) that hold padding, each padded row against
the same example collated alone. Skipped (and said) where a row's output cannot be matched to its
positions, and where the model does not repeat its own output (``eval_determinism`` names that).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_probe import batch_size, input_ids_of, micro_batches, padding_mask, real_mask, spans
from pilot.checks.padding_fixes import RECURRENT_FIX, mask_fix, mask_unread
from pilot.checks.result import CheckResult, Finding
from pilot.data.task import Batch, TaskData, logits_of

RTOL = 1e-2  # of the output's scale: float32 batched vs single runs differ by ~1e-6; reading pads, by O(0.1-1)
LOW_PRECISION_RTOL = 1e-1  # a bf16/fp16 model (model.dtype): its rounding alone moves outputs by ~1e-2
REPEAT_RTOL = 1e-6  # the same input twice: a model that differs more is not deterministic
SPREAD_SHARE = 0.1  # of how far apart different examples' outputs are: a row reading pads moves more
NOISE_FLOOR_RTOL = 1e-4  # float32 batched vs single runs differ by ~1e-6: never judged below this
SAME_OUTPUT_RTOL = 1e-7  # different examples' outputs this close: the model reads nothing of its input
BATCHES = 2  # padded micro-batches compared


def row_scores(task: TaskData, output: Any, batch: dict[str, Any], row: int) -> torch.Tensor | None:
    """The row's output at its real positions (per-position outputs), or the row's output (one per
    row); None when the output does not line up with the batch."""
    scores = logits_of(output).detach().float()
    if scores.dim() == 0 or scores.shape[0] != batch_size(batch):
        return None
    real = padding_mask(task, batch)
    if real is not None and scores.dim() >= 2 and scores.shape[1] == real.shape[1]:
        return scores[row][real[row]]
    return scores[row]


def _same_inputs(task: TaskData, batch: dict[str, Any], row: int, alone: dict[str, Any]) -> bool:
    """Whether the row holds, at its real positions, the same tensors as the example collated alone
    (a collate that draws at random, or reads the other rows, gives other inputs: nothing to compare)."""
    real, real_alone = padding_mask(task, batch), padding_mask(task, alone)
    for key, value in batch.items():
        other = alone.get(key)
        if not torch.is_tensor(value) or not torch.is_tensor(other) or value.dim() < 2:
            continue
        if value.shape[1] == real.shape[1] and other.shape[1] == real_alone.shape[1]:
            mine, theirs = value[row][real[row]], other[0][real_alone[0]]
        else:
            mine, theirs = value[row], other[0]
        if mine.shape != theirs.shape or not torch.equal(mine, theirs):
            return False
    return True


def output_difference(a: torch.Tensor | None, b: torch.Tensor | None) -> float | None:
    """The largest difference over ``b``'s scale; non-finite values count as equal only where both hold
    the same one (NaN beside NaN), and as an infinite difference elsewhere (NaN compares as nothing)."""
    if a is None or b is None or a.shape != b.shape or not a.numel():
        return None
    finite = torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), finite) or not torch.equal(a.isnan(), b.isnan()):
        return math.inf
    if not torch.equal(a[b.isinf()], b[b.isinf()]):  # +inf beside -inf
        return math.inf
    a, b = a[finite], b[finite]
    if not b.numel():
        return 0.0
    scale = max(float(b.abs().max()), 1e-6)
    return float((a - b).abs().max()) / scale


def _not_finite(split: str, alone: dict[str, Any], scores: torch.Tensor | None) -> Finding | None:
    """A finding when the example's own output (collated alone: no padding) holds NaN or inf at its
    real positions: no loss computed from it can train, and every later comparison is void."""
    if scores is None or bool(torch.isfinite(scores).all()):
        return None
    return Finding(
        f"the model's output for this example collated alone (no padding) is not finite: "
        f"{int((~torch.isfinite(scores)).sum())} of {scores.numel()} values at its real positions are NaN "
        "or inf, on a fresh model. Fix: look at the mask the model is given; a mask that hides every real "
        "token gives NaN (PyTorch's key_padding_mask / src_key_padding_mask is True where a position is "
        "IGNORED: pass attention_mask == 0, not attention_mask)",
        split,
        int(alone["index"][0]) if "index" in alone else None,
    )


def padding_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int, split: str = "train"
) -> tuple[list[Finding], dict[str, Any]]:
    """Findings (a padded row whose output differs from the example's alone) and what was compared.

    What counts as differing is measured against how far apart different examples' own outputs are
    (``spread``): a fresh model whose outputs barely depend on their input (a config-built BERT
    classifier: 0.001-0.01 of their scale) moves them by less than ``RTOL`` when it reads padding
    too, so the limit is a share of that spread (never under the float noise floor). Outputs equal for
    every example say the probe cannot judge anything: a finding of its own (``outputs_alike``)."""
    compared, worst, candidates, alone_outputs = 0, 0.0, [], []
    limit = RTOL
    with untouched(model), torch.no_grad():
        model.eval()
        batches = 0
        for start, batch in micro_batches(task, encoded, micro_batch):
            real = padding_mask(task, batch)
            if real is None or bool(real.all()):
                continue
            output = task.forward(model, batch)
            limit = RTOL if logits_of(output).dtype in (torch.float32, torch.float64) else LOW_PRECISION_RTOL
            for row in (int(r) for r in torch.nonzero(~real.all(dim=1)).flatten()):
                alone = task.collate([encoded[start + row]])
                if padding_mask(task, alone) is None or not _same_inputs(task, batch, row, alone):
                    continue
                first, again = task.forward(model, alone), task.forward(model, alone)
                own = row_scores(task, first, alone, 0)
                repeat = output_difference(own, row_scores(task, again, alone, 0))
                if repeat is None or repeat > REPEAT_RTOL:
                    continue  # not comparable, or not repeatable (eval_determinism's business)
                if (void := _not_finite(split, alone, own)) is not None:
                    return [void], {"padded_rows_compared": compared, "largest_relative_difference": None}
                difference = output_difference(row_scores(task, output, batch, row), own)
                if difference is None:
                    continue
                compared, worst = compared + 1, max(worst, difference)
                alone_outputs.append((own, model_inputs(alone)))
                rows = encoded[start : start + batch_size(batch)]
                candidates.append((difference, batch, row, real[row], encoded[start + row], own, output, rows))
            batches += 1
            if batches >= BATCHES:
                break
    spread = spread_of(alone_outputs)
    details = {"padded_rows_compared": compared, "largest_relative_difference": worst, "examples_spread": spread}
    if spread is not None and spread <= SAME_OUTPUT_RTOL:
        details["outputs_alike"] = True
        return [_alike(split, compared, spread)], details
    limit = details["limit"] = judged_limit(limit, spread)
    for difference, batch, row, real_row, item, own, output, rows in candidates:
        if difference > limit:
            if (held := _another_rows_output(task, model, (output, batch, row, own), rows, limit)) is not None:
                return [_rows_reordered(batch, row, held, split)], details
            twice = _twice_difference(task, model, item, own)
            if twice is not None and twice > limit:  # no padding at all, and still another output
                details["twice_relative_difference"] = twice
                return [_mixes_rows(batch, row, twice, split)], details
            recurrent = any(isinstance(module, torch.nn.RNNBase) for module in model.modules())
            unread = not recurrent and mask_unread(task, model, batch)
            return [_reads_padding(batch, row, real_row, difference, split, recurrent, unread)], details
    return [], details


def _twice_difference(task: TaskData, model: torch.nn.Module, item: dict[str, Any], own: torch.Tensor) -> float | None:
    """How far the example's output, collated twice in one micro-batch (no padding: both rows are the
    same), lies from its output alone, the farther of the two rows: a correct model gives the same; one that
    mixes the rows of its batch (a softmax or a normalisation over dim 0) does not. Both rows: a recurrence
    over dim 0 (an nn.LSTM without batch_first runs over the batch) leaves the first row as it is alone, and
    was blamed on padding."""
    try:
        with untouched(model), torch.no_grad():
            model.eval()
            pair = task.collate([item, item])
            if batch_size(pair) != 2:
                return None
            output = task.forward(model, pair)
            differences = [output_difference(row_scores(task, output, pair, row), own) for row in (0, 1)]
            known = [d for d in differences if d is not None]
            return max(known) if known else None
    except Exception:  # noqa: BLE001 - not comparable: the padding finding stands
        return None


def _another_rows_output(
    task: TaskData, model: torch.nn.Module, batched: tuple, rows: list, limit: float
) -> int | None:
    """The other row of the micro-batch whose example, collated alone, gives this row's output (over the
    positions both hold) where the row's own example alone does not: the outputs come back in another order
    than the rows (sorted by length for packing and never put back); None otherwise. ``batched``: the
    batch's output, the batch, the row and its example's output alone."""
    output, batch, row, own = batched
    mine = row_scores(task, output, batch, row)
    if mine is None:
        return None
    with untouched(model), torch.no_grad():
        model.eval()
        for other, item in enumerate(rows):
            if other == row:
                continue
            alone = task.collate([item])
            theirs = row_scores(task, task.forward(model, alone), alone, 0)
            if theirs is None or theirs.dim() != mine.dim() or theirs.shape[1:] != mine.shape[1:]:
                continue
            both = min(len(mine), len(theirs), len(own)) if mine.dim() > 1 else None
            difference = output_difference(mine[:both], theirs[:both])
            if difference is not None and difference <= limit and output_difference(mine[:both], own[:both]) > limit:
                return other
    return None


def _rows_reordered(batch: dict[str, Any], row: int, other: int, split: str) -> Finding:
    index = batch.get("index")
    named = f"example {int(index[other])}'s" if torch.is_tensor(index) else f"row {other}'s"
    return Finding(
        f"the model's outputs come back in another order than the batch's rows: row {row}'s output is {named}, "
        "as that example gives it alone. A sort inside forward (by length, for pack_padded_sequence) whose outputs "
        "are never put back: every loss term then compares one example's output with another's label. Fix: "
        "restore the order after unpacking (out[inverse], inverse = order.argsort()), or pack with "
        "enforce_sorted=False, which restores it itself",
        split,
        int(index[row]) if torch.is_tensor(index) else None,
    )


def _mixes_rows(batch: dict[str, Any], row: int, difference: float, split: str) -> Finding:
    return Finding(
        "each row's output depends on the other rows of its micro-batch, padding aside: the example collated "
        f"twice in one micro-batch (two equal rows, no padding) gives an output {difference:.3g} of its scale away "
        "from the example alone. Something in forward works across the batch dimension: a softmax, a mean or a "
        "normalisation over dim 0 where the positions or features were meant (softmax(scores, dim=0) on [batch, "
        "positions]), a batch statistic in evaluation, a recurrence run over the batch (nn.LSTM, nn.GRU or "
        "nn.RNN without batch_first=True given [batch, positions, features]). Fix: that operation's dim (or "
        "batch_first=True)",
        split,
        int(batch["index"][row]) if "index" in batch else None,
    )


def spread_of(outputs: list[tuple[torch.Tensor, bytes]]) -> float | None:
    """How far apart different examples' own outputs are: the largest difference over a pair of outputs of
    the same shape whose inputs differ (``model_inputs``: a duplicated example is no pair), over the
    second's scale; None without such a pair."""
    largest = None
    for i, (first, inputs) in enumerate(outputs):
        for second, other in outputs[i + 1 :]:
            if inputs != other and (difference := output_difference(first, second)) is not None:
                largest = difference if largest is None else max(largest, difference)
    return largest


def judged_limit(limit: float, spread: float | None) -> float:
    """The relative difference above which an output moved: ``limit``, or less where different examples'
    own outputs lie closer (a share of their ``spread``), never under the float noise floor."""
    return limit if spread is None else min(limit, max(NOISE_FLOOR_RTOL, SPREAD_SHARE * spread))


def model_inputs(batch: dict[str, Any]) -> bytes:
    """What a collated batch gives the model, as bytes: its tensors but the example's index and labels."""
    return b"".join(
        key.encode() + value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        for key, value in sorted(batch.items())
        if torch.is_tensor(value) and key not in ("index", "labels")
    )


def _alike(split: str, compared: int, spread: float) -> Finding:
    return Finding(
        f"the fresh model gives the same output for {compared} different examples collated alone (they differ by "
        f"{spread:.3g} of its scale at most): either it does not read its input — a mask that hides every position "
        "alike does this (token_type_ids given where attention_mask belongs: arguments passed by position in "
        "another order than the model's signature), as does an input forward never passes — or its last layer "
        "starts at zero. Either way no comparison of its outputs (padding, causality) can judge anything here",
        split,
    )


def _reads_padding(
    batch: dict[str, Any],
    row: int,
    real_row: torch.Tensor,
    difference: float,
    split: str,
    recurrent: bool = False,
    mask_unread: bool = False,
) -> Finding:
    return Finding(
        f"the model reads the padding: this row, padded by {int((~real_row).sum())} position(s) in a "
        f"micro-batch of {batch_size(batch)}, gives an output {difference:.3g} of its scale "
        "away from the same example collated alone (at its real positions). "
        + (RECURRENT_FIX if recurrent else mask_fix(batch, real_row, mask_unread)),
        split,
        int(batch["index"][row]) if "index" in batch else None,
    )


def with_comparison(
    result: CheckResult, findings: list[Finding], details: dict[str, Any], name: str, verdict: str = "fail"
) -> CheckResult:
    """Inspect's result with a comparison on the model's outputs (``name``: padding, causality): a finding
    gives it ``verdict`` (named first unless inspect's verdict is already as bad); the comparison's
    numbers go into its details."""
    result.details[name] = details
    if not findings:
        return result
    if result.verdict == "fail" or result.verdict == verdict:
        result.findings.extend(findings)
        return result
    return CheckResult(result.step, verdict, str(findings[0]), findings + result.findings, result.details)


def pad_collision(task: TaskData, encoded: torch.Tensor) -> str:
    """Why real positions went missing, where the declared pad id (``info["pad_id"]``) is itself a token
    of the example as encode gave it: a mask built as ``ids != pad_id`` hides that real token too."""
    pad = task.info.get("pad_id") if isinstance(task.info, dict) else None
    if not isinstance(pad, int) or encoded.is_floating_point():
        return ""
    at = torch.nonzero(encoded == pad).flatten().tolist()
    return (
        (
            f": the pad id {pad} (info['pad_id']) is also a real token of this example (at position(s) {spans(at)}), "
            "so a mask of ids != pad id hides it as padding. Fix: a pad id no real token uses (one past the vocabulary)"
        )
        if at
        else ""
    )


def pad_masked_targets(task: TaskData, tokens: list[int], batch: Batch | None = None) -> str:
    """Why real targets were left out, when each is the pad id itself: labels masked by value. The pad id
    is the declared one (``info['pad_id']``), else the one value the collated ``batch`` holds at its padding."""
    pad, said = task.info.get("pad_id") if isinstance(task.info, dict) else None, "info['pad_id']"
    if not isinstance(pad, int) and batch is not None:
        pad, said = padding_value(task, batch), "the value at every padding position"
    if not isinstance(pad, int) or not tokens or any(t != pad for t in tokens):
        return ""
    return (
        f": each is token {pad}, the pad id ({said}), so labels masked by value (labels[ids == pad_id] = "
        "-100) drop the real ones too (a pad token set to the end-of-sequence token, as GPT-2's tokenizers are). "
        "Fix: mask padding by position (the attention mask or each row's length), or a pad id no real token uses"
    )


def padding_value(task: TaskData, batch: Batch) -> int | None:
    """The one input id a collated batch holds at every padding position (attention mask 0), or None."""
    ids, mask = input_ids_of(batch), real_mask(task, batch)
    if ids is None or mask is None or ids.shape != mask.shape or bool(mask.all()):
        return None
    values = torch.unique(ids[~mask.bool()])
    return int(values[0]) if values.numel() == 1 else None
