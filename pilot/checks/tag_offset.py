"""Labels one position off their tokens (a task whose label at position t tags the token at t,
``target_position="same_position"``): a warning from the data alone.

A tag is mostly a property of its own token (a part of speech, an entity's first piece). Over the
labelled positions of the training split, the conditional entropy of the label given the token at
t, at t-1 and at t+1 is measured: when a neighbour's token fixes the labels far better than the
token at t, the labels sit one position off their tokens — the classic cause is a special token
(``<bos>``, ``[CLS]``) put in front of ``input_ids`` and not of ``labels``. Statistical evidence: a
``warn`` naming the numbers, never a ``fail``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

OFFSETS = (-1, 0, 1)
MIN_POSITIONS = 200  # fewer labelled positions say nothing reliable
RATIO, GAP = 0.5, 0.1  # a neighbour at most half the entropy of the own token, and 0.1 nat lower


def tagged_rows(encoded: list[dict[str, Any]]) -> list[tuple[list[int], list[int]]] | None:
    """Each encoded example's token ids and labels as lists, or None where they are not a tagger's (one
    integer label per token, as tensors or lists), without the positions an ``attention_mask`` of the
    example marks as padding."""
    rows = []
    for item in encoded:
        ids, labels = item.get("input_ids"), item.get("labels")
        if isinstance(ids, list) and isinstance(labels, list):  # encode may leave tensors to collate
            try:
                ids, labels = torch.as_tensor(ids), torch.as_tensor(labels)
            except (TypeError, ValueError):
                return None
        if not (torch.is_tensor(ids) and torch.is_tensor(labels) and ids.dim() == labels.dim() == 1):
            return None
        if ids.shape != labels.shape or labels.is_floating_point() or ids.is_floating_point():
            return None
        mask = item.get("attention_mask")
        if isinstance(mask, (list, torch.Tensor)) and len(mask) == len(ids):
            real = torch.as_tensor(mask).ne(0)
            ids, labels = ids[real], labels[real]
        rows.append((ids.tolist(), labels.tolist()))
    return rows


def _entropies(encoded: list[dict[str, Any]]) -> tuple[dict[int, float], int]:
    """Conditional entropy (nats) of the label given the token at each offset, and the positions counted."""
    counts: dict[int, dict[int, Counter]] = {k: defaultdict(Counter) for k in OFFSETS}
    positions = 0
    for ids, labels in tagged_rows(encoded) or []:
        for t, label in enumerate(labels):
            if label < 0 or label == IGNORE_INDEX or not 1 <= t < len(ids) - 1:
                continue  # a position with both neighbours: every offset counts the same positions
            positions += 1
            for k in OFFSETS:
                counts[k][ids[t + k]][label] += 1
    entropy = {}
    for k, by_token in counts.items():
        total = sum(sum(c.values()) for c in by_token.values()) or 1
        bits = sum(n * math.log(sum(c.values()) / n) for c in by_token.values() for n in c.values())
        entropy[k] = bits / total
    return entropy, positions


def tag_offset_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.target_position != "same_position" or not encoded:
        return [], {}
    entropy, positions = _entropies(encoded[:1000])
    if positions < MIN_POSITIONS:
        return [], {"labelled_positions": positions}
    details = {"labelled_positions": positions, "entropy_by_offset": entropy}
    own = entropy[0]
    best = min((k for k in OFFSETS if k), key=lambda k: entropy[k])
    if not (entropy[best] <= RATIO * own and own - entropy[best] >= GAP):
        return _rows_off(encoded[:1000], details)
    where = "after" if best > 0 else "before"
    return [
        Finding(
            f"the labels look one position off their tokens: the token {where} each labelled position fixes its "
            f"label far better than the token at it (conditional entropy {entropy[best]:.3f} vs {own:.3f} nats "
            f"over {positions} labelled positions of the training split). A special token (<bos>, [CLS]) put "
            "in front of input_ids and not of labels does this. Fix: give labels the same leading positions "
            f"(with {IGNORE_INDEX}) so that the label at t tags the token at t"
        )
    ], details


ROW_MIN_LABELS = 4  # labelled positions a row needs to be judged on its own
ROW_AGREES, ROW_DISAGREES = 0.9, 0.5  # a row off: its neighbour's tags >= 90% right, its own <= 50%
ROW_SHARE, ROW_MIN = 0.1, 5  # of the judged rows, and at least this many


def _rows_off(encoded: list[dict[str, Any]], details: dict[str, Any]) -> tuple[list[Finding], dict[str, Any]]:
    """Some rows one position off (most aligned): each token's usual label (over the whole split) fits a
    row's labels at a neighbour's position and not at its own — rows whose ids were built from another
    text than their labels (``text.strip()`` for the ids, the raw text for the tags)."""
    rows = tagged_rows(encoded) or []
    usual: dict[int, Counter] = defaultdict(Counter)
    for ids, labels in rows:
        for token, label in zip(ids, labels):
            if label >= 0 and label != IGNORE_INDEX:
                usual[token][label] += 1
    tag_of = {token: counts.most_common(1)[0][0] for token, counts in usual.items()}
    judged, off = 0, {}
    for number, (ids, labels) in enumerate(rows):
        at = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX and 1 <= t < len(ids) - 1]
        if len(at) < ROW_MIN_LABELS:
            continue
        judged += 1
        share = {k: sum(tag_of.get(ids[t + k]) == labels[t] for t in at) / len(at) for k in OFFSETS}
        best = max((k for k in OFFSETS if k), key=lambda k: share[k])
        if share[best] >= ROW_AGREES and share[0] <= ROW_DISAGREES:
            off[number] = best
    details["rows_judged"], details["rows_off"] = judged, len(off)
    if judged == 0 or len(off) < max(ROW_MIN, ROW_SHARE * judged):
        return [], details
    number, offset = next(iter(off.items()))
    where = "before" if offset < 0 else "after"
    return [
        Finding(
            f"{len(off)} of {judged} training rows have their labels one position off their tokens (the rest are "
            f"aligned): in each, the token {where} a labelled position carries the label that token usually has "
            f"(>= {ROW_AGREES:.0%} of its positions), the token at it does not (<= {ROW_DISAGREES:.0%}). Their ids "
            "and labels were built from different texts (ids from text.strip(), tags from the raw text; a token "
            "added to some rows only). Fix: build both from the same text",
            "train",
            number,
        )
    ], details
