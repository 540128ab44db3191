"""Leak-free train/validation/test split by group or by time.

By group: each group's split is decided by a hash of (salt, group id), so a
group never straddles two splits and adding examples does not move old groups.
By time: examples sorted by ``time``; train gets the oldest, test the newest,
and the cut points fall between distinct times, so train < val < test strictly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pilot.config.values import enum_value
from pilot.data.task import Example

SPLITS = ("train", "val", "test")


def _unit_interval(salt: str, key: str) -> float:
    digest = hashlib.sha256(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_by_group(
    examples: Sequence[Example], val_fraction: float, test_fraction: float, salt: str
) -> dict[str, list[Example]]:
    splits: dict[str, list[Example]] = {name: [] for name in SPLITS}
    for example in examples:
        u = _unit_interval(salt, example.group)
        if u < test_fraction:
            splits["test"].append(example)
        elif u < test_fraction + val_fraction:
            splits["val"].append(example)
        else:
            splits["train"].append(example)
    return splits


def split_by_time(examples: Sequence[Example], val_fraction: float, test_fraction: float) -> dict[str, list[Example]]:
    missing = [e.index for e in examples if e.time is None]
    if missing:
        raise ValueError(
            f"data.split.by=time needs a time on every example; example(s) {missing[:5]} have none. "
            "Fix: give every example a time (data=hf_instructions: data.time_field=<the column that holds it>; a "
            "task of yours: each Example's time), or data.split.by=group."
        )
    times = sorted({e.time for e in examples})
    # cut between distinct times so that equal times never land in two splits
    n_times = len(times)
    train_end = times[max(0, int(n_times * (1 - val_fraction - test_fraction)) - 1)]
    val_end = times[max(0, int(n_times * (1 - test_fraction)) - 1)]
    splits: dict[str, list[Example]] = {name: [] for name in SPLITS}
    for example in sorted(examples, key=lambda e: (e.time, e.index)):
        if example.time <= train_end:
            splits["train"].append(example)
        elif example.time <= val_end:
            splits["val"].append(example)
        else:
            splits["test"].append(example)
    return splits


def make_splits(examples: Sequence[Example], split_cfg) -> dict[str, list[Example]]:
    """``split_cfg``: a mapping with by, val_fraction, test_fraction, salt (data.split)."""
    split_cfg = dict(split_cfg or {})
    by = enum_value(split_cfg.get("by", "group"))
    val, test = split_cfg.get("val_fraction", 0.1), split_cfg.get("test_fraction", 0.1)
    if by not in ("group", "time"):
        raise ValueError(
            f"data.split.by={by!r} is not a split method. Fix: data.split.by=group "
            "(conversation, patient, document...) or data.split.by=time."
        )
    if by == "time":
        return split_by_time(examples, val, test)
    return split_by_group(examples, val, test, split_cfg.get("salt", "pilot"))
