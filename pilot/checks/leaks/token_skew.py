"""Inputs of one split drawn from another distribution than training's (``token_skew_warnings``): a
transformation applied to one split only — validation lower- or upper-cased, another prompt
template, another tokenizer — moves the frequencies of its tokens far from training's, so the
split measures inputs the model never trained on.

The Jensen-Shannon divergence between a later split's token frequencies and training's is compared
with the same divergence between two halves of the training split, halved by group (what a split by
group gives with no transformation): warned when it is at least ``skew_min_divergence`` nats and
``skew_ratio`` times the halves'. The tokens most over-represented in the split are named.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.leaks.thresholds import LeakThresholds
from pilot.checks.leaks.token_leak import real_tokens, token_key
from pilot.checks.result import Finding
from pilot.data.task import TaskData

SHOWN = 5  # over-represented tokens named


def _occurrences(views: ModelViews, key: str, split: str) -> list[Counter]:
    return [Counter(real_tokens(row, key)) for row in views.inputs[split]]


def _total(rows: list[Counter]) -> Counter:
    total: Counter = Counter()
    for row in rows:
        total.update(row)
    return total


def _divergence(a: Counter, b: Counter) -> float:
    """Jensen-Shannon divergence (nats) of two token frequency tables."""
    size_a, size_b = sum(a.values()) or 1, sum(b.values()) or 1
    value = 0.0
    for token in a.keys() | b.keys():
        p, q = a[token] / size_a, b[token] / size_b
        m = (p + q) / 2
        value += 0.5 * ((p * math.log(p / m) if p else 0.0) + (q * math.log(q / m) if q else 0.0))
    return value


def _halves_by_group(views: ModelViews, rows: list[Counter]) -> tuple[Counter, Counter]:
    groups = [example.group for example in views.splits["train"]]
    names = sorted(set(groups))
    np.random.default_rng(0).shuffle(names)
    first = set(names[: len(names) // 2])
    return (
        _total([r for r, g in zip(rows, groups) if g in first]),
        _total([r for r, g in zip(rows, groups) if g not in first]),
    )


def _over_represented(split: Counter, train: Counter, task: TaskData) -> str:
    size_s, size_t = sum(split.values()) or 1, sum(train.values()) or 1
    gain = sorted(split, key=lambda t: split[t] / size_s - train[t] / size_t, reverse=True)[:SHOWN]
    if task.decode_tokens is not None:
        return ", ".join(repr("".join(task.decode_tokens([t]))) for t in gain)
    return ", ".join(map(str, gain))


def token_skew_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else token_key(views)
    train_rows = views.inputs.get("train") or []
    if key is None or len({e.group for e in views.splits.get("train", [])}) < 2 * limits.leak_min_class:
        return [], {}
    rows = _occurrences(views, key, "train")
    train = _total(rows)
    baseline = _divergence(*_halves_by_group(views, rows))
    report: dict[str, Any] = {"token_key": key, "train_halves_divergence": round(baseline, 4)}
    findings = []
    for split in views.order():
        if split == "train" or not views.inputs[split] or not train_rows:
            continue
        counts = _total(_occurrences(views, key, split))
        divergence = _divergence(counts, train)
        report[f"{split}_divergence"] = round(divergence, 4)
        if divergence < limits.skew_min_divergence or divergence < limits.skew_ratio * baseline:
            continue
        findings.append(
            Finding(
                f"{split} inputs are drawn from another token distribution than train's: Jensen-Shannon "
                f"divergence {divergence:.3f} nats from train, against {baseline:.3f} between two halves of train "
                f"split by group; most over-represented in {split}: {_over_represented(counts, train, task)}",
                detail=f"a transformation applied to one split only (case, a prompt template, another "
                f"tokenizer)? {split} then measures inputs the model never trained on",
            )
        )
    return findings, report
