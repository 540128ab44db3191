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
from pilot.checks.tag_drift import tag_drift_findings
from pilot.data.task import IGNORE_INDEX, TaskData

OFFSETS = (-1, 0, 1)
MIN_POSITIONS = 200  # fewer labelled positions say nothing reliable
RATIO, GAP = 0.5, 0.1  # a neighbour at most half the entropy of the own token, and 0.1 nat lower
FRONT_SHARE = 0.9  # rows that start with one labelled token (the token after: only then)


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


def _conditional_entropy(pairs: list[tuple[int, int]]) -> float:
    """Entropy (nats) of the second of each pair given the first."""
    by_first: dict[int, Counter] = defaultdict(Counter)
    for first, second in pairs:
        by_first[first][second] += 1
    return sum(n * math.log(sum(c.values()) / n) for c in by_first.values() for n in c.values()) / max(len(pairs), 1)


def _mirrored(encoded: list[dict[str, Any]], details: dict[str, Any]) -> str | None:
    """Labels in the opposite order to their tokens (``words[::-1]`` fed to a right-to-left model, the tags
    left in reading order): the token at the mirrored position of its row (n-1-t) fixes each label far
    better than the token at t."""
    own, mirror = [], []
    for ids, labels in tagged_rows(encoded) or []:
        for t, label in enumerate(labels):
            if label >= 0 and label != IGNORE_INDEX and len(ids) > 2:
                own.append((ids[t], label))
                mirror.append((ids[len(ids) - 1 - t], label))
    if len(own) < MIN_POSITIONS:
        return None
    at, opposite = _conditional_entropy(own), _conditional_entropy(mirror)
    details["entropy_mirrored"] = {"own": at, "mirrored": opposite}
    if not (opposite <= RATIO * at and at - opposite >= GAP):
        return None
    return (
        f"the labels run in the opposite order to their tokens: the token at the mirrored position of each row "
        f"(n-1-t) fixes the label at t far better than the token at t (conditional entropy {opposite:.3f} vs "
        f"{at:.3f} nats over {len(own)} labelled positions of the training split). input_ids reversed for a "
        "right-to-left model (words[::-1]) while the labels kept reading order, or the other way round, does "
        "this. Fix: reverse both or neither"
    )


def as_collated(task: TaskData, encoded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The encoded items as collate names them (``input_ids``, ``labels``, ``attention_mask``: each item
    collated alone, its one row) where encode used other names; else the items themselves."""
    if not encoded or ("input_ids" in encoded[0] and "labels" in encoded[0]):
        return encoded
    rows = []
    for item in encoded:
        batch = task.collate([item])
        rows.append(
            {k: batch[k][0] for k in ("input_ids", "labels", "attention_mask") if torch.is_tensor(batch.get(k))}
        )
    return rows


def _labelled_front(encoded: list[dict[str, Any]]) -> bool:
    """Whether (nearly) every row starts with one same token that carries a label: a special token put in
    front of the ids and not of the labels. Without it, the token after fixing the label is the task's own
    nature (punctuation restoration labels each word with the punctuation that follows it)."""
    rows = [(ids, labels) for ids, labels in tagged_rows(encoded) or [] if ids]
    firsts = Counter(ids[0] for ids, _ in rows)
    if not firsts:
        return False
    token, count = firsts.most_common(1)[0]
    labelled = sum(ids[0] == token and labels[0] >= 0 and labels[0] != IGNORE_INDEX for ids, labels in rows)
    return count >= FRONT_SHARE * len(rows) and labelled >= FRONT_SHARE * count


def tag_offset_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.target_position != "same_position" or not encoded:
        return [], {}
    encoded = as_collated(task, encoded[:1000])
    entropy, positions = _entropies(encoded)
    if positions < MIN_POSITIONS:
        return [], {"labelled_positions": positions}
    details = {"labelled_positions": positions, "entropy_by_offset": entropy}
    own = entropy[0]
    best = min((k for k in OFFSETS if k), key=lambda k: entropy[k])
    if not (entropy[best] <= RATIO * own and own - entropy[best] >= GAP) or (best > 0 and not _labelled_front(encoded)):
        if reversed_labels := _mirrored(encoded, details):
            return [Finding(reversed_labels)], details
        findings, details = _rows_off(encoded, details)
        if findings:
            return findings, details
        findings, drift = tag_drift_findings(task, tagged_rows(encoded) or [])
        return findings, {**details, **drift}
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


ROW_MIN_LABELS = 4  # informative positions a row needs to be judged at an offset
ROW_AGREES, ROW_DISAGREES = 0.9, 0.5  # a row off: its neighbour's tags >= 90% right, its own <= 50%
ROW_SHARE, ROW_MIN = 0.1, 5  # of the judged rows, and at least this many
ROW_REACH = 32  # positions either way a row's labels are tried against its tokens


def _usual_tags(rows: list[tuple[list[int], list[int]]]) -> tuple[dict[int, int], int | None]:
    """Each token's most common label over the split, and the most common label of all (``O``)."""
    usual: dict[int, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for ids, labels in rows:
        for token, label in zip(ids, labels):
            if label >= 0 and label != IGNORE_INDEX:
                usual[token][label] += 1
                overall[label] += 1
    common = overall.most_common(1)[0][0] if overall else None
    return {token: counts.most_common(1)[0][0] for token, counts in usual.items()}, common


def _uncut(rows: list[tuple[list[int], list[int]]]) -> list[tuple[list[int], list[int]]]:
    """The rows shorter than the longest (truncation leaves its rows at the cap: the uncut ones are what a
    label cut on another side cannot have moved), where they hold ``MIN_POSITIONS`` labelled positions;
    else every row."""
    longest = max((len(ids) for ids, _ in rows), default=0)
    shorter = [(ids, labels) for ids, labels in rows if len(ids) < longest]
    labelled = sum(label >= 0 and label != IGNORE_INDEX for _, labels in shorter for label in labels)
    return shorter if labelled >= MIN_POSITIONS else rows


def _agreement(ids: list[int], labels: list[int], at: list[int], k: int, tags: tuple) -> float | None:
    """Of the labelled positions whose label or whose token at ``t + k``'s usual tag is not the common
    label (an entity: the ``O`` everywhere says nothing), the share where the two agree; None with fewer
    than ``ROW_MIN_LABELS`` such positions. A token never labelled (``[CLS]``) says nothing either."""
    tag_of, common = tags
    pairs = [(tag_of.get(ids[t + k]), labels[t]) for t in at if 0 <= t + k < len(ids)]
    told = [(usual, label) for usual, label in pairs if usual is not None and (usual != common or label != common)]
    return sum(usual == label for usual, label in told) / len(told) if len(told) >= ROW_MIN_LABELS else None


def _row_offset(ids: list[int], labels: list[int], tags: tuple) -> int | None:
    """The offset at which a row's labels fit its tokens' usual tags (>= ``ROW_AGREES``) where at 0 they
    do not (<= ``ROW_DISAGREES``); 0 for a row that fits at 0; None where it cannot be judged."""
    at = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
    own = _agreement(ids, labels, at, 0, tags)
    if own is None:
        return None
    if own > ROW_DISAGREES:
        return 0
    for distance in range(1, min(ROW_REACH, len(ids) - 1) + 1):
        for k in (-distance, distance):
            if (share := _agreement(ids, labels, at, k, tags)) is not None and share >= ROW_AGREES:
                return k
    return 0


def _rows_off(encoded: list[dict[str, Any]], details: dict[str, Any]) -> tuple[list[Finding], dict[str, Any]]:
    """Some rows off their tokens (most aligned): each token's usual label (over the whole split) fits a
    row's labels at another position than its own — rows whose ids were built from another text than their
    labels (``text.strip()`` for the ids, the raw text for the tags), or cut on another side (ids truncated
    from the left, labels from the right)."""
    rows = tagged_rows(encoded) or []
    tags = _usual_tags(_uncut(rows))
    offsets = {number: _row_offset(ids, labels, tags) for number, (ids, labels) in enumerate(rows)}
    judged = sum(k is not None for k in offsets.values())
    off = {number: k for number, k in offsets.items() if k}
    details["rows_judged"], details["rows_off"] = judged, len(off)
    if judged == 0 or len(off) < max(ROW_MIN, ROW_SHARE * judged):
        return [], details
    number, offset = next(iter(off.items()))
    if set(off.values()) == {offset} and abs(offset) == 1:
        where = "before" if offset < 0 else "after"
        said = (
            f"{len(off)} of {judged} training rows have their labels one position off their tokens (the rest are "
            f"aligned): in each, the token {where} a labelled position carries the label that token usually has "
            f"(>= {ROW_AGREES:.0%} of its informative positions), the token at it does not (<= {ROW_DISAGREES:.0%}). "
            "Their ids and labels were built from different texts (ids from text.strip(), tags from the raw text; a "
            "token added to some rows only). Fix: build both from the same text"
        )
    else:
        said = _rows_off_by_many(off, judged, rows)
    return [Finding(said, "train", number)], details


def _rows_off_by_many(off: dict[int, int], judged: int, rows: list[tuple[list[int], list[int]]]) -> str:
    moves = ", ".join(f"{k:+d} ({n} rows)" for k, n in Counter(off.values()).most_common(3))
    longer = sum(len(rows[n][0]) for n in off) / len(off) > sum(len(ids) for ids, _ in rows) / len(rows)
    return (
        f"{len(off)} of {judged} training rows have their labels off their tokens by another number of positions in "
        f"each row (most: {moves}; the rest are aligned): in each, the tokens that many positions away "
        f"carry the labels they usually have (>= {ROW_AGREES:.0%}), the tokens at the labels do not (<= "
        f"{ROW_DISAGREES:.0%})"
        + (", and they are the longer rows" if longer else "")
        + ". Ids and labels cut on different sides: a tokenizer truncating from the left (truncation_side='left') "
        "and labels cut with labels[:max_len], or labels built from another tokenisation than the ids. Fix: "
        "truncate the labels with the ids (the tokenizer's word_ids of the truncated encoding)"
    )
