"""Sentence pairs in one order in training and the other in a later split (``segment_order_warnings``):
a validation file whose columns are swapped (hypothesis, premise), a loader that builds each split with
its own function. The model is then judged on pairs it never saw the like of.

For pair inputs that say which segment each token is (``token_type_ids``, BERT-style): per row, whether
the first segment is the longer (real tokens, special tokens included). When training's pairs have a
clear order (the first segment the longer in 80% of the rows, or the shorter in 80%) and a later split's
have the other, the split is warned about. Pairs of alike lengths show no order and are not judged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.result import Finding

MIN_ROWS = 10
ONE_WAY = 0.8  # of a split's pairs whose first segment is the longer (or, 1 - this, the shorter)


def _first_longer(row: dict[str, np.ndarray]) -> bool | None:
    types, mask = row.get("token_type_ids"), row.get("attention_mask")
    if types is None or types.ndim != 1:
        return None
    real = mask.astype(bool) if mask is not None and mask.shape == types.shape else np.ones(types.shape, bool)
    first, second = int(((types == 0) & real).sum()), int(((types == 1) & real).sum())
    return None if second == 0 or first == second else first > second


def _order(share: float) -> str | None:
    return "longer" if share >= ONE_WAY else ("shorter" if share <= 1 - ONE_WAY else None)


def segment_order_warnings(views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    shares = {}
    for split in views.order():
        votes = [vote for row in views.inputs.get(split) or [] if (vote := _first_longer(row)) is not None]
        if len(votes) >= MIN_ROWS:
            shares[split] = sum(votes) / len(votes)
    report = {f"{split}_first_segment_longer": round(share, 3) for split, share in shares.items()}
    trained = _order(shares["train"]) if "train" in shares else None
    if trained is None:
        return [], report
    findings = []
    for split, share in shares.items():
        if split == "train" or _order(share) in (None, trained):
            continue
        findings.append(
            Finding(
                f"{split} pairs come in the other order: the first segment (token_type_ids 0) is the {trained} in "
                f"{shares['train']:.0%} of train's pairs but the {_order(share)} in "
                f"{share if _order(share) == 'longer' else 1 - share:.0%} of {split}'s",
                detail=f"columns swapped in one split's file? {split} then measures pairs the model never trained on",
            )
        )
    return findings, report
