"""Texts: normalised (NFKC, case, punctuation, whitespace), the raw fields that hold them, and near-duplicate
texts with the same target, found by an exact shingle set-similarity join."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

_PUNCT = re.compile(r"[^\w\s]+")


def normalise_text(text: str) -> str:
    """NFKC, case-folded, punctuation to spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


def text_fields(task: TaskData) -> list[str]:
    """Raw fields holding text: strings, at least half of them with more than one word."""
    examples = [e for ex in task.splits.values() for e in ex]
    if not examples:
        return []
    names = sorted({name for e in examples for name in e.fields})
    chosen = []
    for name in names:
        values = [e.fields.get(name) for e in examples]
        if all(isinstance(v, str) for v in values):
            if sum(1 for v in values if len(v.split()) > 1) >= 0.5 * len(values):
                chosen.append(name)
    return chosen


def _shingles(tokens: Sequence[Any], size: int) -> set:
    """Every run of ``size`` consecutive characters (of a string) or tokens; a shorter sequence is one."""
    if not isinstance(tokens, str):
        tokens = tuple(tokens)
    if len(tokens) <= size:
        return {tokens} if tokens else set()
    return {tokens[i : i + size] for i in range(len(tokens) - size + 1)}


class _TooManyPairs(Exception):
    """The shingle join would form more candidate pairs than the declared limit."""


class _ShingleSets:
    """Sets of shingles coded as (row, shingle id) arrays, ids shared through one vocabulary."""

    def __init__(self, sets: list[set], vocab: dict[Any, int]):
        self.sets = sets
        self.size = np.array([len(x) for x in sets], dtype=np.int64)
        self.rows = np.repeat(np.arange(len(sets)), self.size)  # ascending
        self.ids = np.fromiter(
            (vocab.setdefault(item, len(vocab)) for items in sets for item in items), np.int64, count=len(self.rows)
        )

    def prefixes(self, rank: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """(row, id) of each set's ``|x| - ceil(threshold |x|) + 1`` rarest shingles (``rank``: rarity)."""
        order = np.lexsort((rank[self.ids], self.rows))  # by row, then rarity
        rows, ids = self.rows[order], self.ids[order]
        position = np.arange(len(rows)) - np.repeat(np.cumsum(self.size) - self.size, self.size)
        keep = position < (self.size - np.ceil(threshold * self.size - 1e-9).astype(np.int64) + 1)[rows]
        return rows[keep], ids[keep]


def _jaccard_pairs(
    sets_a: list[set], sets_b: list[set], threshold: float, max_pairs: int = 500_000_000
) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for every pair of a set of ``sets_a`` and one of ``sets_b`` at or above
    ``threshold`` (see ``_jaccard_coded``)."""
    vocab: dict[Any, int] = {}
    return _jaccard_coded(_ShingleSets(sets_a, vocab), _ShingleSets(sets_b, vocab), threshold, max_pairs)


def _jaccard_coded(a: _ShingleSets, b: _ShingleSets, threshold: float, max_pairs: int) -> list[tuple[int, int, float]]:
    """Exact set-similarity join with the prefix filter (Chaudhuri et al. 2006; Bayardo et al.,
    "Scaling up all pairs similarity search", 2007): with shingles ordered rarest first, two sets
    with Jaccard >= t share a shingle among the first |x| - ceil(t |x|) + 1 of each. Candidates
    come from a sort-join of those prefixes (rare shingles: few pairs), each is then verified on
    its full sets. Raises ``_TooManyPairs`` when the prefix join exceeds ``max_pairs``."""
    if threshold <= 0:
        raise ValueError(f"shingle_jaccard={threshold}: a near-duplicate threshold must be > 0")
    if not len(a.rows) or not len(b.rows):
        return []
    frequency = np.bincount(np.concatenate([a.ids, b.ids]))
    rank = np.argsort(np.argsort(frequency, kind="stable"), kind="stable")  # 0 = rarest shingle
    rows_a, ids_a = a.prefixes(rank, threshold)
    rows_b, ids_b = b.prefixes(rank, threshold)
    order = np.argsort(ids_a, kind="stable")
    ids_a, rows_a = ids_a[order], rows_a[order]
    lo, hi = np.searchsorted(ids_a, ids_b, "left"), np.searchsorted(ids_a, ids_b, "right")
    width = hi - lo
    if int(width.sum()) > max_pairs:
        raise _TooManyPairs(int(width.sum()))
    offsets = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    pair_a = rows_a[np.repeat(lo, width) + offsets]
    pair_b = np.repeat(rows_b, width)
    codes = pair_b * len(a.size) + pair_a
    cells = len(a.size) * len(b.size)
    if cells <= 50_000_000:  # a bitmap of every pair: faster than sorting a long join
        seen = np.zeros(cells, dtype=bool)
        seen[codes] = True
        candidates = np.flatnonzero(seen)
    else:
        candidates = np.unique(codes)
    cand_b, cand_a = np.divmod(candidates, len(a.size))
    fits = (a.size[cand_a] >= threshold * b.size[cand_b]) & (b.size[cand_b] >= threshold * a.size[cand_a])
    return _verify(a, b, cand_a[fits], cand_b[fits], threshold)


def _verify(
    a: _ShingleSets, b: _ShingleSets, cand_a: np.ndarray, cand_b: np.ndarray, threshold: float
) -> list[tuple[int, int, float]]:
    """Exact Jaccard of candidate pairs (grouped by their ``b`` set, ascending): mark the b set's
    shingles, count the marked shingles of every candidate a set at once."""
    if not len(cand_a):
        return []
    vocabulary = int(max(a.ids.max(), b.ids.max())) + 1
    marked = np.zeros(vocabulary, dtype=bool)
    start_a = np.cumsum(a.size) - a.size
    start_b = np.cumsum(b.size) - b.size
    found: list[tuple[int, int, float]] = []
    bounds = np.flatnonzero(np.r_[True, cand_b[1:] != cand_b[:-1], True])
    for first, last in zip(bounds[:-1], bounds[1:]):
        j = int(cand_b[first])
        mine = b.ids[start_b[j] : start_b[j] + b.size[j]]
        marked[mine] = True
        rows = cand_a[first:last]
        lengths = a.size[rows]
        offsets = np.cumsum(lengths) - lengths
        positions = np.repeat(start_a[rows] - offsets, lengths) + np.arange(int(lengths.sum()))
        shared = np.add.reduceat(marked[a.ids[positions]].astype(np.int64), offsets)
        marked[mine] = False
        score = shared / (lengths + b.size[j] - shared)
        for i, value in zip(rows[score >= threshold], score[score >= threshold]):
            found.append((int(i), j, float(value)))
    return found


def _targets(views: ModelViews, split: str) -> list[Any]:
    """A comparable target per example: the class id, or the tokens in the loss (in order)."""
    out = []
    for label in views.labels[split]:
        flat = label.reshape(-1)
        out.append(
            ("class", flat[0].item()) if flat.size == 1 else ("tokens", tuple(flat[flat != IGNORE_INDEX].tolist()))
        )
    return out


def _targets_agree(x, y, limits: LeakThresholds) -> bool:
    if x[0] != y[0]:
        return False
    if x[0] == "class" or x == y:
        return x == y
    a, b = _shingles(x[1], limits.shingle), _shingles(y[1], limits.shingle)
    return bool(a | b) and len(a & b) / len(a | b) >= limits.shingle_jaccard


def _template_shingles(rows: list[set], share: float) -> set:
    """Shingles in more than ``share`` of ``rows`` (at least 20): a template's text (a system prompt, a form's
    labels), which every row holds and which says nothing of one row being another's copy."""
    if len(rows) < 20:
        return set()
    counts = Counter(shingle for row in rows for shingle in row)
    return {shingle for shingle, count in counts.items() if count > share * len(rows)}


def text_near_duplicates(task, views, fields, pairs, reported, limits, note, skipped) -> list[Finding]:
    vocab: dict[Any, int] = {}
    normalised = {
        s: [normalise_text(" ".join(e.fields[f] for f in fields)) for e in views.splits[s]] for s in views.order()
    }
    sets = {  # a short text shares most of its shingles with any text of its template: compared whole elsewhere
        s: [_shingles(text, limits.shingle) if len(text) >= limits.near_dup_min_chars else set() for text in rows]
        for s, rows in normalised.items()
    }
    template = _template_shingles([row for rows in sets.values() for row in rows], limits.template_share)
    texts = {s: _ShingleSets([row - template for row in rows], vocab) for s, rows in sets.items()}
    targets = {s: _targets(views, s) for s in views.order()}
    warnings = []
    for a, b in pairs:
        try:
            candidates = _jaccard_coded(texts[a], texts[b], limits.shingle_jaccard, limits.max_pairs)
        except _TooManyPairs as too_many:
            skipped.append(f"near-duplicate texts {a}/{b}: {too_many} candidate pairs > max_pairs {limits.max_pairs}")
            continue
        best: dict[int, tuple[int, float]] = {}
        other_target = set()
        for i, j, score in candidates:
            if (b, views.splits[b][j].index) in reported:
                continue
            if not _targets_agree(targets[a][i], targets[b][j], limits):
                other_target.add(j)
                continue
            if j not in best or score > best[j][1]:
                best[j] = (i, score)
        hits = sorted(((i, j, s) for j, (i, s) in best.items()), key=lambda h: -h[2])
        listed = [
            f"{a} example {views.splits[a][i].index} ~ {b} example {views.splits[b][j].index} (overlap {s:.2f})"
            for i, j, s in hits[: limits.listed]
        ]
        note((a, b), "near_duplicate_texts", len(hits), listed)
        note((a, b), "similar_text_other_target", len(other_target - set(best)), [])
        if hits and (len(hits) >= limits.near_dup_min_examples or any(s == 1.0 for _, _, s in hits)):
            warnings.append(
                Finding(
                    f"{len(hits)} {b} example(s) nearly the same text as a {a} example ({limits.shingle}-character "
                    f"shingles overlapping >= {limits.shingle_jaccard}) with the same target: {'; '.join(listed)}",
                    detail="near-duplicates (edited, re-encoded or templated copies); drop them or group them",
                )
            )
    return warnings
