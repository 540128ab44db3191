"""Labels that drift one position further off their tokens after each occurrence of one token (a task
whose label at position t tags the token at t): a warning from the data alone.

The classic cause: tags given per whitespace word ("Paris," is one word) aligned through a tokenizer's
``word_ids``, which count punctuation as words of their own. After each comma every tag is read from
one word further on. No single offset fits such a row (``tag_offset`` tries those): the offset is the
number of commas before the position. Over the labelled positions of the training split (in their
order, the positions ``-100`` leaves out skipped), the conditional entropy of the i-th label given the
i-th labelled token other than a token X is compared with the best constant offset over the same
positions: when reading the labels past X fits them far better than any constant, they drift at X.
Statistical evidence: a ``warn`` naming the token and the numbers, never a ``fail``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

CONSTANT = range(-3, 4)  # the constant offsets a drift must beat
CANDIDATES, ROW_SHARE = 20, 0.1  # the tokens tried: the most common ones, in at least 10% of the rows
MIN_AFTER = 200  # labelled positions after at least one occurrence of the token
RATIO, GAP = 0.5, 0.1  # the drift's entropy at most half the best constant's, and 0.1 nat lower


def _entropy(pairs: list[tuple[int, int]]) -> float:
    """Conditional entropy (nats) of the label given the token, over (token, label) pairs."""
    by_token: dict[int, Counter] = defaultdict(Counter)
    for token, label in pairs:
        by_token[token][label] += 1
    total = sum(sum(c.values()) for c in by_token.values()) or 1
    return sum(n * math.log(sum(c.values()) / n) for c in by_token.values() for n in c.values()) / total


def _labelled(rows: list[tuple[list[int], list[int]]]) -> list[tuple[list[int], list[int]]]:
    """Each row's labelled positions: their tokens and labels, in order."""
    out = []
    for ids, labels in rows:
        at = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
        out.append(([ids[t] for t in at], [labels[t] for t in at]))
    return out


def _tried(seqs: list[tuple[list[int], list[int]]], token: int) -> dict | None:
    """The labels read as those of the row's tokens other than ``token`` (the i-th label tags the i-th
    labelled token that is not ``token``: tags given for words the ids split ``token`` from), against every
    constant offset over the same positions."""
    drift: list[tuple[int, int]] = []
    constant: dict[int, list[tuple[int, int]]] = {k: [] for k in CONSTANT}
    after = 0
    for tokens, labels in seqs:
        kept = [(j, t) for j, t in enumerate(tokens) if t != token]
        for i, label in enumerate(labels[: len(kept)]):
            if 0 <= i + CONSTANT[0] and i + CONSTANT[-1] < len(tokens):
                drift.append((kept[i][1], label))
                for k in CONSTANT:
                    constant[k].append((tokens[i + k], label))
                after += kept[i][0] > i
    if after < MIN_AFTER:
        return None
    entropies = {k: _entropy(pairs) for k, pairs in constant.items()}
    best = min(entropies, key=lambda k: entropies[k])
    return {
        "drift": _entropy(drift),
        "constant": entropies[best],
        "offset": best,
        "positions": len(drift),
        "after": after,
    }


def tag_drift_findings(task: TaskData, rows: list[tuple[list[int], list[int]]]) -> tuple[list[Finding], dict]:
    """A warning when the labels drift one labelled position per occurrence of one token (``rows``: each
    training example's token ids and labels, padding removed, as ``tag_offset.tagged_rows`` gives them)."""
    seqs = _labelled(rows)
    in_rows = Counter(token for tokens, _ in seqs for token in set(tokens))
    found = None
    for token, count in in_rows.most_common(CANDIDATES):
        if count < ROW_SHARE * len(seqs):
            break
        tried = _tried(seqs, token)
        if tried and tried["drift"] <= RATIO * tried["constant"] and tried["constant"] - tried["drift"] >= GAP:
            if found is None or tried["drift"] < found[1]["drift"]:
                found = (token, tried)
    if found is None:
        return [], {}
    token, tried = found
    shown = repr(task.decode_tokens([token])[0]) if task.decode_tokens is not None else f"token id {token}"
    with_token = in_rows[token]
    return [
        Finding(
            f"the labels drift one labelled position further off their tokens after each {shown} ({with_token} of "
            f"{len(seqs)} training rows hold it): the labels, read in order, tag the row's tokens other than "
            f"{shown}, each as many labelled positions on as there are {shown} before it (conditional entropy {tried['drift']:.3f} nats, vs "
            f"{tried['constant']:.3f} at the best single offset, {tried['offset']:+d}, over {tried['positions']} "
            f"labelled positions, {tried['after']} after a {shown}). Tags given per whitespace word and aligned "
            "with a tokenizer's word_ids, which count punctuation as words of their own, do this. Fix: align each "
            "tag with the tokens of its own word (encode the words pre-split, is_split_into_words=True, or map "
            "tokens to words by character offsets)"
        )
    ], {"drift_token": token, **tried}
