"""Answer spans that point beside the answer (extractive question answering), seen without a model.

Start and end token positions computed by hand go wrong by a constant: a prefix the template adds to the
context ("context: ") left out of the offset, a [CLS] not counted, character offsets of the context used
as if the question were not before it. Every span then points the same few tokens away from its answer,
the model learns consistent wrong spans, and every loss check passes. Seen from the data: each training
example collated alone, its labelled span (a ``[start, end]`` row of ``labels``, or ``start_positions``
and ``end_positions``) decoded with the task's ``decode_tokens`` and compared (``comparable``: no spaces,
word markers or case) with the example's own text fields that occur once in its input (a key also asked in the question occurs twice,
and a span moved onto the question's copy proves nothing). A field the spans read in most examples
(``SHARE``; an end inclusive or exclusive alike) is fine. Where no field is read at the labelled spans
but one is read by most spans moved by the same number of tokens (up to ``REACH`` either way), that move
is named (a ``fail``). Spans that read no field at any move (answers kept as ids, texts the tokens do not
spell) are not judged.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.field_end import comparable
from pilot.checks.loss_probe import input_ids_of
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 64  # first training examples read
MIN_ROWS = 10
SHARE = 0.8  # of the judged examples: a field the spans read
REACH = 16  # tokens: moves tried either way


def _span(batch: dict[str, Any]) -> tuple[int, int] | None:
    """The labelled (start, end) of a batch of one example, where it holds one."""
    labels, start, end = batch.get("labels"), batch.get("start_positions"), batch.get("end_positions")
    if torch.is_tensor(start) and torch.is_tensor(end) and start.numel() == end.numel() == 1:
        pair = (int(start.reshape(-1)[0]), int(end.reshape(-1)[0]))
    elif torch.is_tensor(labels) and not labels.is_floating_point() and labels.shape == (1, 2):
        pair = (int(labels[0, 0]), int(labels[0, 1]))
    else:
        return None
    return pair if 0 < pair[0] <= pair[1] else None  # 0: no answer ([CLS]), by convention


def _rows(task: TaskData, encoded: list[dict[str, Any]]) -> list[tuple[list[int], tuple[int, int], list[str]]]:
    """(token ids, labelled span, the example's comparable text fields) of the first training examples."""
    by_index = {example.index: example for example in task.splits.get("train", [])}
    rows = []
    for item in encoded[:ROWS]:
        example = by_index.get(item.get("index"))
        batch = task.collate([item])
        ids, span = input_ids_of(batch), _span(batch)
        if example is None or ids is None or span is None or ids.dim() != 2 or span[1] >= ids.shape[1]:
            continue
        fields = [comparable(v) for v in example.fields.values() if isinstance(v, str)]
        whole = comparable("".join(task.decode_tokens(ids[0].tolist())))
        rows.append((ids[0].tolist(), span, [f if whole.count(f) == 1 else "" for f in fields if f]))
    return rows


def _read(task: TaskData, rows: list, move: int) -> dict[int, int]:
    """Field position -> examples whose span moved by ``move`` reads it (end inclusive or exclusive)."""
    read: dict[int, int] = {}
    for ids, (start, end), fields in rows:
        start, end = start + move, end + move
        if start < 0 or end >= len(ids):
            continue
        spans = {comparable("".join(task.decode_tokens(ids[start : end + stop]))) for stop in (0, 1)}
        for position, field in enumerate(fields):
            if field and field in spans:
                read[position] = read.get(position, 0) + 1
    return read


def span_label_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.decode_tokens is None:
        return [], {}
    rows = _rows(task, encoded)
    if len(rows) < MIN_ROWS:
        return [], {}
    needed = SHARE * len(rows)
    here = max(_read(task, rows, 0).values(), default=0)
    details = {"spans_read": len(rows), "spans_reading_a_field": here}
    if here >= needed:
        return [], details
    for distance in range(1, REACH + 1):
        for move in (distance, -distance):
            moved = max(_read(task, rows, move).values(), default=0)
            if moved >= needed:
                details.update(move=move, spans_reading_a_field_moved=moved)
                return [_finding(move, here, moved, len(rows))], details
    return [], details


def _finding(move: int, here: int, moved: int, rows: int) -> Finding:
    way = "left" if move > 0 else "right"  # spans that must move right lie left of their answers
    return Finding(
        f"the labelled answer spans point {abs(move)} token(s) {way} of the answers: moved by {move:+d} token(s), "
        f"{moved} of {rows} training spans read one of the example's own text fields (its answer), at their "
        f"labelled positions {here}. Start and end positions computed with an offset that leaves out (or counts "
        "twice) part of what comes before the context: a template prefix ('context: '), the question and its "
        "separators, a [CLS]. The model then learns consistent, wrong spans, and no loss shows it. Fix: take the "
        "positions from the tokenizer's offset mapping of the whole input (char_to_token on the full sequence)",
        "train",
    )
