"""The leak detectors' declared thresholds (``LeakThresholds``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LeakThresholds:
    """Declared thresholds of the leak detectors (module defaults; see the module docstring)."""

    id_min_distinct: int = 20  # an id-like field has at least this many distinct values
    id_min_shared: int = 2  # warn when at least this many of a split's values are in an earlier split
    id_min_shared_share: float = 0.1  # ... and at least this share of them
    near_dup_rms: float = 0.05  # vectors: RMS difference per standardised feature below this ...
    near_dup_relative: float = 0.1  # ... and below this share of the median nearest distance between
    # the two splits (in few dimensions close pairs occur by chance)
    near_dup_own_share: float = 0.5  # ... and this share of the earlier example's distance to its nearest
    # neighbour in its own split (where examples crowd, a close pair is no copy)
    near_dup_min_examples: int = 2  # vectors and texts: warn from this many near-duplicate examples (a
    # single close pair occurs by chance in a dense data set); an exact copy is warned alone
    template_share: float = 0.5  # texts: a shingle in more than this share of the rows (at least 20) is the
    # template's, not evidence of a copy: left out of the overlap
    near_dup_min_chars: int = 30  # texts: shorter ones (normalised) are compared whole only: "set timer 36"
    # and "set timer 3" share most shingles of a template, not a copy
    shingle: int = 5  # texts: shingles of this many characters of normalised text
    # (of tokens, for a sequence target)
    shingle_jaccard: float = 0.8  # texts: near-duplicate at this Jaccard overlap of shingles or more
    time_inside_share: float = 0.2  # warn when more than this share of a split's times is inside train's range
    leak_score: float = 0.99  # one feature's |correlation| or single-threshold balanced accuracy
    leak_min_examples: int = 30  # target leakage: at least this many labelled examples ...
    leak_min_class: int = 10  # ... and this many of a class (and of the rest) to test it
    class_scale_ratio: float = 10.0  # one class's inputs this many times smaller than another's (no overlap)
    lookup_per_value: int = 5  # a code (values without order): at least this many examples per distinct value
    skew_min_divergence: float = 0.05  # a later split's token frequencies vs train's: warn at this JS divergence
    skew_ratio: float = 4.0  # (nats) or more, and this many times the divergence between two halves of train
    feature_shift: float = 5.0  # a later split's feature mean this many train standard deviations from train's ...
    feature_spread_ratio: float = 5.0  # ... or its spread this many times train's (either way), and skew_ratio
    # times the most between two halves of train split by group
    listed: int = 3  # example pairs listed per finding
    max_vector_features: int = 4096  # near-duplicates and leakage of vectors up to this many features
    max_pairs: int = 500_000_000  # near-duplicate search per pair of splits: at most this many
    # candidate pairs (vectors: n_a x n_b; texts: pairs sharing a shingle)


def thresholds_dict(limits: LeakThresholds) -> dict[str, Any]:
    return asdict(limits)
