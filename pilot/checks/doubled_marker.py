"""A row's start or end marker twice (``<bos><bos>...``, ``...<eos><eos>``): a warning from the data alone.

A tokenizer that adds its own ``<bos>`` (Llama's, Gemma's) given text that already starts with one (a
chat template rendered to a string, a prompt format written with ``<s>``) starts every row on the marker
twice; an ``<eos>`` appended to ids whose tokenizer already appends one (T5's ``</s>``, a template's
end of turn) ends every row on it twice. The model never saw the doubled marker in pretraining and
learns to emit the stop token after the stop token. What shows it without knowing the special ids:
in most rows the first (last) two real tokens are one same token that appears nowhere else in the row —
a marker, not text (a template starting ``###`` repeats ``#`` further on, at ``### Response``).
Rows all of one width without an attention mask or a declared pad id (padded in ``encode``) do not
say where their real tokens end and are not judged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pilot.checks.loss_probe import SEQ2SEQ
from pilot.checks.result import Finding
from pilot.checks.stop_token import token_list
from pilot.data.task import IGNORE_INDEX, TaskData

MIN_ROWS = 10
SHARE = 0.8  # of the rows, at least, start (end) on the same marker twice


def _real_tokens(task: TaskData, encoded: list[dict[str, Any]]) -> list[list[int]]:
    """Each row's token ids without its padding (its ``attention_mask``, else the declared pad id); [] when
    the rows do not say where their padding is."""
    rows, masks = [], []
    for item in encoded:
        key = "input_ids" if "input_ids" in item else "inputs"
        ids = token_list(item.get(key))
        if ids is None:
            return []
        rows.append(ids)
        masks.append(token_list(item.get("attention_mask")))
    if all(mask is not None and len(mask) == len(ids) for mask, ids in zip(masks, rows)):
        return [[t for t, real in zip(ids, mask) if real] for ids, mask in zip(rows, masks)]
    pad = task.info.get("pad_id") if isinstance(task.info, dict) else None
    if pad is not None:
        return [[t for t in ids if t != int(pad)] for ids in rows]
    return rows if len({len(ids) for ids in rows}) > 1 else []  # unpadded rows of their own widths


def _doubled(rows: list[list[int]], end: bool) -> tuple[int | None, int]:
    """The token that starts (ends) most rows twice and appears nowhere else in them, and in how many rows."""
    edges = [(ids[-2:] if end else ids[:2]) for ids in rows if len(ids) >= 4]
    twice = [edge[0] for edge in edges if edge[0] == edge[1]]
    if not twice:
        return None, 0
    token = Counter(twice).most_common(1)[0][0]
    body = (lambda ids: ids[:-2]) if end else (lambda ids: ids[2:])
    rows_with = sum(
        1
        for ids in rows
        if len(ids) >= 4 and (ids[-2:] if end else ids[:2]) == [token, token] and token not in body(ids)
    )
    return token, rows_with


def _decoder_targets(task: TaskData, encoded: list[dict[str, Any]]) -> list[list[int]]:
    """A seq2seq task's counted targets per row (labels of the decoder's own positions), else []."""
    if task.kind != SEQ2SEQ:
        return []
    labels = [token_list(item.get("labels")) for item in encoded]
    if any(row is None for row in labels):
        return []
    return [[t for t in row if t >= 0 and t != IGNORE_INDEX] for row in labels]


def doubled_marker_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    findings, details = [], {}
    for what, rows in (
        ("training rows", _real_tokens(task, encoded[:1000])),
        ("decoder targets", _decoder_targets(task, encoded[:1000])),
    ):
        rows = [ids for ids in rows if len(ids) >= 4]
        if len(rows) < MIN_ROWS:
            continue
        details[what] = len(rows)
        for end, where, cause in (
            (False, "start", "the tokenizer adds it and the text (a template, a prompt format) already holds it"),
            (True, "end", "the tokenizer appends it and the code appends it again"),
        ):
            token, count = _doubled(rows, end)
            details[f"{what}: {where} on one token twice"] = count
            if token is None or count < SHARE * len(rows):
                continue
            shown = task.decode_tokens([token])[0] if task.decode_tokens is not None else f"id {token}"
            findings.append(
                Finding(
                    f"{count} of {len(rows)} {what} {where} on {shown!r} twice, a token found nowhere else in them: "
                    f"{'an' if end else 'a'} {where} marker doubled ({cause}). The model trains on a sequence it never saw in "
                    f"pretraining{' and learns to emit the stop token after the stop token' if end else ''}. Fix: "
                    "add the marker once (encode with add_special_tokens=False when the text already holds it, or "
                    "do not append it)"
                )
            )
    return findings, details
