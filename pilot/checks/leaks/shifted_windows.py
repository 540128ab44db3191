"""Overlapping windows scattered across splits (``shifted_window_warnings``): windows cut from one series
or text with a stride shorter than the window (one per day over the last 12 days, token chunks of 512
every 256), then split at random. A validation window then shares most of its input with a training
window on each side of it, shifted by a few steps, and validation measures memory of the series, not
a forecast. The duplicate checks see different examples; without time stamps the time split check has
nothing to read.

What the model sees (``ModelViews``), per input of at least ``MIN_LENGTH`` steps (a 1-D sequence, or
the rows of a 2-D one along either axis: [time, features] or [channels, time]): a later split's example
*has a training neighbour before it* when its first ``RUN`` steps occur at position d > 0 of a training
example and from there on the two agree exactly to that example's end (val[0 : n - d] == train[d : n]),
over at least half its length; *after it* likewise at its other end. Runs of few distinct values (masks,
segment ids, padding), runs that count (0, 1, 2, ...: position ids) and runs found in more places than
overlapping windows could put them (``COMMON_SHARE``: a template) are not looked up. Only exact equality counts: windows scaled each by its own
statistics are not found.

An example with neighbours on both sides is what a random split of overlapping windows makes; a split
by time leaves neighbours on one side only (the first validation windows overlap the last training
ones), and is not judged. Warned when at least ``MIN_EXAMPLES`` and ``MIN_SHARE`` of a later split's
examples have both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.result import Finding

MIN_LENGTH = 8  # steps of an input to be read as a window
RUN = 8  # steps hashed per lookup (half the input when shorter)
MIN_DISTINCT = 0.5  # of a run's steps: distinct values (masks and segment ids have 2)
MIN_EXAMPLES, MIN_SHARE = 5, 0.2  # of a later split's examples with a neighbour on both sides
COMMON_SHARE = (
    0.1  # a run in more places than this share of the base examples (and two windows' steps) is shared structure
)
MAX_EXAMPLES = 4000
CHUNK = (
    256  # base examples of one length hashed at once  # per split (the first ones): the lookup is linear in their steps
)
PRIME = np.uint64(1_000_003)


def _steps(value: np.ndarray, axis: int) -> np.ndarray | None:
    """One uint64 symbol per step along ``axis`` (the step's values, bit for bit), or None."""
    if value.ndim == 1 and axis == 0:
        rows = value[:, None]
    elif value.ndim == 2:
        rows = value if axis == 0 else value.T
    else:
        return None
    if rows.shape[0] < MIN_LENGTH or not np.issubdtype(rows.dtype, np.number) or rows.dtype == np.bool_:
        return None
    bits = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    mixed = np.zeros(len(bits), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in bits.T:
            mixed = mixed * PRIME + column
    return mixed


def _hashes(symbols: np.ndarray, run: int) -> np.ndarray:
    """The hash of every ``run`` consecutive steps along the last axis (rows of equal length at once)."""
    windows = np.lib.stride_tricks.sliding_window_view(symbols, run, axis=-1)
    powers = PRIME ** np.arange(run - 1, -1, -1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (windows * powers).sum(axis=-1, dtype=np.uint64)


def _worth_looking_up(steps: np.ndarray) -> bool:
    """A run with enough distinct values that does not count (0, 1, 2, ...: position ids, a range)."""
    with np.errstate(over="ignore"):
        differences = np.diff(steps)  # wrapping: equal steps stay equal
    return len(np.unique(steps)) >= MIN_DISTINCT * len(steps) and not (differences == differences[0]).all()


class _Index:
    """Where the runs looked up (``wanted``) occur in the base split's examples, sorted by hash."""

    def __init__(self, sequences: list[np.ndarray], run: int, wanted: np.ndarray) -> None:
        self.sequences, hashes, owners, places = sequences, [], [], []
        by_length: dict[int, list[int]] = {}
        for i, symbols in enumerate(sequences):
            by_length.setdefault(len(symbols), []).append(i)
        for members in by_length.values():
            for start in range(0, len(members), CHUNK):
                chunk = members[start : start + CHUNK]
                h = _hashes(np.stack([sequences[i] for i in chunk]), run)  # [examples, places]
                rows, cols = np.nonzero(np.isin(h, wanted))
                hashes.append(h[rows, cols])
                owners.append(np.asarray(chunk)[rows])
                places.append(cols)
        self.hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        order = np.argsort(self.hashes, kind="stable")
        self.hashes = self.hashes[order]
        self.owners = np.concatenate(owners)[order] if owners else np.zeros(0, int)
        self.places = np.concatenate(places)[order] if places else np.zeros(0, int)

    def where(self, value: np.uint64, length: int) -> list[tuple[int, int]]:
        """Where the run occurs in the base split; nowhere when it occurs in more places than a
        window's overlapping neighbours could hold it (a template, a structure every example shares)."""
        lo, hi = np.searchsorted(self.hashes, value, "left"), np.searchsorted(self.hashes, value, "right")
        if hi - lo > max(2 * length, COMMON_SHARE * len(self.sequences)):
            return []
        return list(zip(self.owners[lo:hi].tolist(), self.places[lo:hi].tolist()))


def _ends(symbols: np.ndarray, run: int) -> tuple[np.uint64 | None, np.uint64 | None]:
    """The hashes of an example's first and last runs (None for one not worth looking up)."""
    head, tail = symbols[:run], symbols[len(symbols) - run :]
    return (
        _hashes(head, run)[0] if _worth_looking_up(head) else None,
        _hashes(tail, run)[0] if _worth_looking_up(tail) else None,
    )


def _neighbours(symbols: np.ndarray, index: _Index, run: int) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(base example, shift) of a neighbour before this example and of one after it, or None each."""
    n, before, after = len(symbols), None, None
    head, tail = _ends(symbols, run)
    for j, d in index.where(head, n) if head is not None else []:
        other = index.sequences[j]
        overlap = len(other) - d
        if d > 0 and 2 * overlap >= n and overlap <= n and np.array_equal(symbols[:overlap], other[d:]):
            before = (j, d)
            break
    for j, q in index.where(tail, n) if tail is not None else []:
        other = index.sequences[j]
        overlap = q + run  # the other's first ``overlap`` steps are this one's last
        if overlap < n and 2 * overlap >= n and np.array_equal(symbols[n - overlap :], other[:overlap]):
            after = (j, n - overlap)
            break
    return before, after


def _sequences(views: ModelViews, split: str, key: str, axis: int) -> list[np.ndarray] | None:
    rows = views.inputs.get(split) or []
    out = []
    for row in rows[:MAX_EXAMPLES]:
        value = row.get(key)
        symbols = _steps(np.asarray(value), axis) if value is not None else None
        if symbols is None:
            return None
        out.append(symbols)
    return out


def shifted_window_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    try:
        return _shifted_windows(views)
    except (ValueError, TypeError, IndexError, MemoryError) as error:  # inputs this reading does not fit
        return [], {"skipped": f"{type(error).__name__}: {str(error)[:200]}"}


def _shifted_windows(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    order = views.order()
    if len(order) < 2 or not views.inputs.get(order[0]):
        return [], {}
    first = views.inputs[order[0]][0]
    findings, report = [], {}
    for key in sorted(first):
        for axis in (0, 1):
            base = _sequences(views, order[0], key, axis)
            if not base:
                continue
            run = min(RUN, min(len(s) for s in base) // 2)
            laters = {split: seqs for split in order[1:] if (seqs := _sequences(views, split, key, axis))}
            ends = [h for seqs in laters.values() for s in seqs if len(s) >= 2 * run for h in _ends(s, run)]
            index = _Index(base, run, np.unique(np.asarray([h for h in ends if h is not None], dtype=np.uint64)))
            for split, later in laters.items():
                found = _both_sides(later, index, run)
                report[f"{split}_{key}_axis{axis}_neighbours_on_both_sides"] = len(found)
                if len(found) >= MIN_EXAMPLES and len(found) >= MIN_SHARE * len(later):
                    findings.append(_finding(views, order[0], split, key, found, len(later)))
            if findings:
                return findings, report
    return findings, report


def _both_sides(later: list[np.ndarray], index: _Index, run: int) -> list[tuple[int, tuple[int, int], tuple[int, int]]]:
    found = []
    for i, symbols in enumerate(later):
        if len(symbols) < 2 * run:
            continue
        before, after = _neighbours(symbols, index, run)
        if before is not None and after is not None:
            found.append((i, before, after))
    return found


def _finding(views: ModelViews, base: str, split: str, key: str, found: list, checked: int) -> Finding:
    i, (j, d), (k, e) = found[0]
    example = views.splits[split][i].index
    return Finding(
        f"{len(found)} of {checked} {split} examples overlap a {base} example on each side ('{key}' equal on the "
        f"overlap, shifted), e.g. {split} example {example}: its first steps are {base} example "
        f"{views.splits[base][j].index} from step {d} on, its last steps {base} example {views.splits[base][k].index}'s "
        f"first ones (shifted by {e})",
        detail="windows cut with a stride shorter than the window and split at random, or examples that are "
        "stretches of sequences shared across splits (a playlist, a session): validation then measures memory of "
        "those sequences, not what a new one does. Fix: split by time (data.split.by=time, with a gap of one "
        "window), or by the sequence the examples come from",
    )
