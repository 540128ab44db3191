"""Part of ``inspect``: one meaning per column of multi-hot labels, in every split. A multi-label task's
labels are a 0/1 vector per example whose column j stands for one tag name; where the tag names are in the
example's raw fields (a list of strings: ``{"tags": ["travel", "health"]}``), each column's name is read
from the data itself: the one name present in exactly the examples whose column is 1. A vocabulary built
per split (a ``MultiLabelBinarizer`` fitted on each split, tags numbered in first-seen order) gives a
column another name in validation than in training: the model is scored on other tags than it learned,
and every loss and count still adds up. A ``fail`` naming the column and both names, only where the names of
validation's columns are training's numbered otherwise (a name training gives to another column): tags
spelt otherwise in one split ('Sports'), or a field that is no tag list, say nothing of the numbering.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import Example, TaskData

MAX_EXAMPLES = 512  # of each split
EXPLAINED = 2  # training's columns a field's names must tell apart to be the tags
CHUNK = 64


def _labels(task: TaskData, items: list[dict[str, Any]]) -> torch.Tensor | None:
    """The split's collated labels, one 0/1 row per example, or None when they are no multi-hot rows."""
    rows = []
    for start in range(0, len(items), CHUNK):
        labels = task.collate(items[start : start + CHUNK]).get("labels")
        chunk = len(items[start : start + CHUNK])
        if not torch.is_tensor(labels) or labels.dim() != 2 or labels.shape[0] != chunk:
            return None
        if rows and labels.shape[1] != rows[0].shape[1]:  # as wide as each chunk's longest row: positions
            return None
        rows.append(labels.detach().float())
    labels = torch.cat(rows) if rows else None
    if labels is None or labels.shape[1] < 2 or not bool(((labels == 0) | (labels == 1)).all()):
        return None
    return labels


def _tag_fields(example: Example) -> list[str]:
    return sorted(
        name
        for name, value in example.fields.items()
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)
    )


def _column_names(labels: torch.Tensor, tags: list[set[str]]) -> dict[int, str]:
    """Column -> the one tag name present in exactly the examples whose column is 1 (columns never 1, or
    matched by no name or by several, left out). A column's candidates are the names every example whose
    column is 1 holds: few, checked against the examples without it."""
    named = {}
    for column in range(labels.shape[1]):
        on = labels[:, column].bool().tolist()
        positive = [t for t, o in zip(tags, on) if o]
        if not positive:
            continue
        candidates = set.intersection(*positive)
        matching = [name for name in candidates if not any(name in t for t, o in zip(tags, on) if not o)]
        if len(matching) == 1:
            named[column] = matching[0]
    return named


def tag_column_findings(task: TaskData, encoded: dict[str, list[dict[str, Any]]]) -> tuple[list[Finding], dict]:
    train = task.splits.get("train") or []
    fields = _tag_fields(train[0]) if train else []
    if not fields or not encoded.get("train"):
        return [], {}
    per_split: dict[str, dict[str, dict[int, str]]] = {}
    for split, examples in task.splits.items():
        items = encoded.get(split, [])[:MAX_EXAMPLES]
        labels = _labels(task, items) if items else None
        if labels is None:
            continue
        for field in fields:
            tags = [set(e.fields.get(field) or []) for e in examples[: len(items)]]
            per_split.setdefault(field, {})[split] = _column_names(labels, tags)
    findings = []
    for field, named in per_split.items():
        train_names = named.get("train", {})
        if len(train_names) < EXPLAINED:  # the field's names do not tell training's columns: not its tags
            continue
        column_of = {name: column for column, name in train_names.items()}
        for split, columns in named.items():
            moved = [  # a name training gives to another column: one vocabulary, numbered otherwise
                (c, train_names[c], n)
                for c, n in sorted(columns.items())
                if c in train_names and column_of.get(n, c) != c
            ]
            if split != "train" and moved:
                column, there, here = moved[0]
                findings.append(
                    Finding(
                        f"label column {column} is tag {here!r} in {split} but {there!r} in train ({len(moved)} "
                        f"column(s) of the multi-hot labels name other tags of field {field!r} there): a tag "
                        "vocabulary built per split (a MultiLabelBinarizer fitted on each split, tags numbered in "
                        "first-seen order), so the model is scored on other tags than it learned",
                        split,
                        detail="Fix: build the tag -> column mapping once, from training (or a fixed tag list), "
                        "and encode every split with it",
                    )
                )
    return findings, {f: {s: len(c) for s, c in named.items()} for f, named in per_split.items()}
