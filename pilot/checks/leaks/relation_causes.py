"""Why a later split's labels do not follow its inputs as train's do (``label_relation``), where the
data itself shows it: each cause is proposed, then proven by the same nearest-neighbour vote giving
the split its labels again once the cause is undone.

- labels under another code (a 0/1 flag whose meaning flips, class ids numbered in another order): the
  votes and the labels agree once each vote is mapped to the label most often found with it;
- inputs in another column order (an export whose columns were sorted, ``dict.values()`` over keys in
  another order): the order of the split's columns that puts its examples nearest train's, where the
  votes agree once the columns are put back in it.
A label code is said only where the split's inputs lie as near train's as train's own do: inputs in
another order move away, and their votes too can follow another code.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

REFERENCES, QUERIES = 1000, 200
QUANTILES = np.linspace(0.05, 0.95, 7)
MAX_COLUMNS = 32  # pairs of columns tried per pass: 496
IN_DISTRIBUTION = 2.0  # a split whose examples lie at most this much farther from train's than its own


def other_code(votes: np.ndarray, labels: np.ndarray) -> tuple[dict[int, int], float]:
    """Each vote's most frequent label among the split's examples given it, and the share the votes
    give once mapped so; an identity map is no other code."""
    mapping = {}
    for vote in np.unique(votes):
        found, counts = np.unique(labels[votes == vote], return_counts=True)
        mapping[int(vote)] = int(found[counts.argmax()])
    mapped = np.array([mapping[int(v)] for v in votes])
    return mapping, float((mapped == labels).mean())


def _distance(reference: np.ndarray, queries: np.ndarray) -> float:
    """Mean squared distance from each query to its nearest reference."""
    distances = (queries**2).sum(1)[:, None] - 2 * queries @ reference.T + (reference**2).sum(1)[None, :]
    return float(np.maximum(distances.min(1), 0).mean())


class Nearness:
    """How near a split's raw features (in some column order) lie to train's, standardised by train's
    statistics, against train's own held-out examples (``ratio`` about 1: drawn alike)."""

    def __init__(self, train: np.ndarray, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.mean, std = train.mean(0), train.std(0)
        self.scale = np.where(std > 0, std, 1.0)
        order = rng.permutation(len(train))
        half = len(train) // 2
        self.reference = self._standard(train[order[:half][:REFERENCES]])
        self.own = max(_distance(self.reference, self._standard(train[order[half:][:QUERIES]])), 1e-12)

    def _standard(self, raw: np.ndarray) -> np.ndarray:
        return (raw - self.mean) / self.scale

    def ratio(self, raw: np.ndarray, order: list[int] | None = None) -> float:
        columns = raw[:, order] if order is not None else raw
        return _distance(self.reference, self._standard(columns[:QUERIES])) / self.own


def _by_quantiles(train: np.ndarray, split: np.ndarray) -> list[int]:
    """Each of the split's columns matched to train's column of the closest distribution (quantiles of
    the raw values), one each."""
    from scipy.optimize import linear_sum_assignment

    theirs, mine = np.quantile(split, QUANTILES, axis=0).T, np.quantile(train, QUANTILES, axis=0).T
    rows, columns = linear_sum_assignment(np.abs(theirs[:, None, :] - mine[None, :, :]).sum(-1))
    return [int(c) for _, c in sorted(zip(rows, columns))]


def _swapped(near: Nearness, split: np.ndarray, order: list[int]) -> tuple[list[int], float]:
    """``order`` with pairs of columns swapped while that brings the split's examples nearer train's."""
    best, improved = near.ratio(split, order), True
    while improved:
        improved = False
        for i in range(len(order)):
            for j in range(i + 1, len(order)):
                trial = order.copy()
                trial[i], trial[j] = trial[j], trial[i]
                if (ratio := near.ratio(split, trial)) < best * 0.99:
                    order, best, improved = trial, ratio, True
    return order, best


def column_order(near: Nearness, train: np.ndarray, split: np.ndarray) -> list[int] | None:
    """The order of the split's columns that puts its examples nearest train's: from the order they
    have and from the columns matched by their distributions, pairs swapped while that brings them
    nearer; None when the order they have is that. Up to ``MAX_COLUMNS`` columns."""
    width = split.shape[1]
    if not 2 <= width <= MAX_COLUMNS or width != train.shape[1]:
        return None
    found = [_swapped(near, split, start) for start in (list(range(width)), _by_quantiles(train, split))]
    order = min(found, key=lambda pair: pair[1])[0]
    return None if order == list(range(width)) else order


def said_cause(
    split: str,
    votes: np.ndarray,
    labels: np.ndarray,
    queries: np.ndarray,
    vote: Callable[[np.ndarray], np.ndarray],
    train: np.ndarray,
    enough: float,
    names: list[str] | None,
) -> str | None:
    """The cause, said with its fix, where undoing it gives the split at least ``enough`` of its labels
    (``queries``, ``train``: raw features; ``vote``: the nearest training examples' votes for raw
    queries; ``names``: the class names)."""
    near = Nearness(train)
    order = column_order(near, train, queries)
    if order is not None and float((vote(queries[:, order]) == labels).mean()) >= enough:
        return columns_said(split, order, f"the nearest training examples give {split} its labels again")
    mapping, share = other_code(votes, labels)
    if share >= enough and any(k != v for k, v in mapping.items()) and near.ratio(queries) <= IN_DISTRIBUTION:

        def name(c: int) -> str:
            return repr(names[c]) if names and 0 <= c < len(names) else str(c)

        pairs = ", ".join(f"{name(k)} -> {name(v)}" for k, v in mapping.items() if k != v)
        return (
            f"{split}'s labels are train's under another code: where the nearest training examples say one "
            f"class, {split} says another, consistently ({pairs}; {share:.0%} of {split}'s examples follow "
            f"that map): a flag whose meaning flips between the files (1 = stayed, not churned), class ids "
            f"numbered in another order. Fix: read every split's labels with one coding"
        )
    return None


def columns_said(split: str, order: list[int], proof: str) -> str:
    """The split's columns in another order than train's (``order``: train's column k is the split's
    column ``order[k]``), with what shows it."""
    pairs = sorted((mine, theirs) for theirs, mine in enumerate(order) if mine != theirs)
    moved = ", ".join(f"its column {mine} is train's column {theirs}" for mine, theirs in pairs[:4])
    moved += f" and {len(pairs) - 4} more" if len(pairs) > 4 else ""
    return (
        f"{split}'s inputs are train's columns in another order ({moved}): put back in train's order, {proof}. "
        f"A file whose columns were sorted or listed in another order, read by position (dict.values(), "
        f"df.values). Fix: read the columns by name, in one order for every split"
    )


def reordered_columns(train: np.ndarray, split: np.ndarray, name: str) -> str | None:
    """Said where the split's examples lie far from train's (more than ``IN_DISTRIBUTION`` times train's
    own held-out distance) and as near as train's own once its columns are put in another order."""
    if len(train) < 2 or len(split) < 2:
        return None
    near = Nearness(train)
    if near.ratio(split) <= IN_DISTRIBUTION:
        return None
    order = column_order(near, train, split)
    if order is None or (ratio := near.ratio(split, order)) > IN_DISTRIBUTION:
        return None
    return columns_said(name, order, f"its examples lie as near train's as train's own do ({ratio:.2g}x)")
