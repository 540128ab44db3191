"""Real tokens the attention mask hides (``hidden_token_findings``): a mask built from a stale length (the
text's characters before ``<bos>``/``<eos>`` were added, a length taken before truncation), so that a row's
last tokens are marked as padding. The model never attends to them (nor pools them), the loss still
falls on what is left, and every check that trains passes. Seen from the data alone: positions whose
``attention_mask`` is 0 but whose token is not the declared pad id (``info["pad_id"]``), in most rows of
training as it collates them. A ``warn`` naming a row and the hidden tokens.

And the other way round: the pad id is itself a real token (a character vocabulary whose first entry, a
space sorted first, got id 0 = pad; a pad set to a token the text uses). Seen as positions *between* real
tokens that hold the pad id with ``attention_mask`` 0: padding sits only at a row's ends, so those are
real tokens hidden as padding (a pad equal to ``<eos>`` masked by position is not: its mask is 1).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import input_ids_of, micro_batches, row_items
from pilot.checks.padding import padding_value
from pilot.checks.result import Finding
from pilot.data.task import TaskData

MIN_ROWS = 10
ROWS = 512  # first training examples read
SHARE = 0.5  # of the rows, at least, with a real token hidden
INSIDE_SHARE = 0.1  # of the rows, at least, with the pad id between real tokens, hidden


def hidden_token_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    """Both findings above: real tokens the mask hides, and the pad id as a real token inside the text."""
    pad = task.info.get("pad_id") if isinstance(task.info, dict) else None
    stale, details = _stale_mask(task, encoded, micro_batch, pad) if pad is not None and encoded else ([], {})
    inside, more = _pad_inside_the_text(task, encoded, micro_batch, pad)
    return stale + inside, {**details, **more}


def _pad_inside_the_text(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int, pad: int | None
) -> tuple[list[Finding], dict[str, Any]]:
    judged, rows, first = 0, 0, None
    for start, batch in micro_batches(task, encoded[:ROWS], micro_batch):
        ids, mask = input_ids_of(batch), batch.get("attention_mask")
        if ids is None or not torch.is_tensor(mask) or mask.shape != ids.shape:
            continue
        pad = pad if isinstance(pad, int) else padding_value(task, batch)
        if pad is None:
            continue
        real = ids != pad
        before = real.long().cumsum(1) > 0  # a real token somewhere to the left
        after = real.flip(1).long().cumsum(1).flip(1) > 0  # and to the right
        inside = ~real & before & after & (mask == 0)
        chunk = encoded[start : start + micro_batch]
        items = row_items(batch, chunk) if ids.shape[0] == len(chunk) else [0] * ids.shape[0]  # packed rows: any
        for row, item in enumerate(items):
            judged += 1
            if bool(inside[row].any()):
                rows += 1
                first = first or (start + item, inside[row].nonzero().flatten().tolist()[:6])
    details = {"rows_judged_for_pad_inside": judged, "rows_with_pad_id_inside": rows}
    if judged < MIN_ROWS or rows < INSIDE_SHARE * judged or first is None:
        return [], details
    return [
        Finding(
            f"the pad id {pad} is also a real token inside the text: in {rows} of {judged} training rows, positions "
            f"between real tokens hold it with attention_mask 0 (example {first[0]}, positions {first[1]}), so the "
            "model never sees that token (a vocabulary whose first entry — a space or a character sorted first — "
            "got the pad id, or a pad set to a token the text uses). Fix: a pad id no real token uses (a dedicated "
            "<pad>, or one past the vocabulary), and the mask built by position",
            "train",
            first[0],
        )
    ], details


def _stale_mask(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int, pad: int
) -> tuple[list[Finding], dict[str, Any]]:
    judged, hiding, first = 0, 0, None
    for start, batch in micro_batches(task, encoded[:ROWS], micro_batch):  # as training collates them
        ids, mask = input_ids_of(batch), batch.get("attention_mask")
        if ids is None or not torch.is_tensor(mask) or mask.shape != ids.shape:
            continue
        hidden = (mask == 0) & (ids != int(pad))
        chunk = encoded[start : start + micro_batch]
        items = row_items(batch, chunk) if ids.shape[0] == len(chunk) else [0] * ids.shape[0]  # packed rows: any
        for row, item in enumerate(items):
            judged += 1
            if bool(hidden[row].any()):
                hiding += 1
                if first is None:
                    at = hidden[row].nonzero().flatten().tolist()
                    first = (start + item, at, [int(ids[row, p]) for p in at])
    details = {"rows_judged": judged, "rows_with_real_tokens_hidden": hiding}
    if judged < MIN_ROWS or hiding < SHARE * judged or first is None:
        return [], details
    example, positions, tokens = first
    shown = ", ".join(f"{p}: {t}" for p, t in list(zip(positions, tokens))[:6])
    return [
        Finding(
            f"the attention mask hides real tokens: in {hiding} of {judged} training rows, positions whose "
            f"attention_mask is 0 hold tokens other than the pad id {pad} (this row, position: token {shown}); "
            "the model never attends to them (a mask built from a stale length: the text's before its special "
            "tokens were added, or before truncation). Fix: build attention_mask from the ids collate returns "
            f"(ids != pad id), or say info['pad_id'] if {pad} is not it",
            "train",
            example,
        )
    ], details
