"""What the model sees (``model_views``): each example collated alone, its tensors without ids, and its label;
the helpers the detectors read them with."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pilot.data.task import Example, TaskData

SPLIT_ORDER = ("train", "val", "test")


@dataclass
class ModelViews:
    """Per split, what reaches the model for each example alone (no padding), ids removed."""

    splits: dict[str, list[Example]]
    inputs: dict[str, list[dict[str, np.ndarray]]]
    labels: dict[str, list[np.ndarray]]
    dropped_keys: list[str]  # batch keys left out: index and per-example integer ids
    skipped: str = ""  # why there are no views (no encode/collate, or they raised)

    def order(self) -> list[str]:
        return [s for s in ordered_splits(self.splits) if self.splits[s]]


def ordered_splits(splits: dict[str, Any]) -> list[str]:
    return [s for s in SPLIT_ORDER if s in splits] + sorted(s for s in splits if s not in SPLIT_ORDER)


def _as_array(value: Any, squeeze: bool = True) -> np.ndarray | None:
    """A tensor or array as numpy (the batch dimension of one example dropped); None otherwise."""
    if torch.is_tensor(value):
        value = value.detach().cpu()
        value = (value.float() if value.dtype == torch.bfloat16 else value).numpy()
    if not isinstance(value, np.ndarray):
        return None
    return value[0] if squeeze and value.ndim >= 1 and value.shape[0] == 1 else value


def model_views(task: TaskData, chunk: int = 256) -> ModelViews:
    """Collate each example alone and keep its tensors: what the model and the loss receive.

    Examples whose encoded tensors have the same shapes are collated together (no padding can
    arise among them) and the batch is cut into rows: the same tensors as one collate per
    example, at a fraction of the calls. A batch whose tensors are not one row per example is
    collated example by example instead.
    """
    splits = {s: list(ex) for s, ex in task.splits.items()}
    empty = ModelViews(splits, {s: [] for s in splits}, {s: [] for s in splits}, [])
    if task.encode is None or task.collate is None:
        empty.skipped = "the task has no encode/collate"
        return empty
    raw: dict[str, list[dict[str, np.ndarray]]] = {}
    try:
        for split, examples in splits.items():
            raw[split] = _collated_rows(task, [task.encode(example) for example in examples], chunk)
    except Exception as error:  # the inspect step reports a task that cannot encode; here we say we skipped
        empty.skipped = f"encoding an example alone raised {type(error).__name__}: {str(error)[:200]}"
        return empty
    dropped = ["index"] + _id_keys([row for rows in raw.values() for row in rows])
    inputs = {
        s: [{k: v for k, v in row.items() if k not in dropped and k != "labels"} for row in rows]
        for s, rows in raw.items()
    }
    labels = {s: [row.get("labels", np.zeros(0)) for row in rows] for s, rows in raw.items()}
    return ModelViews(splits, inputs, labels, dropped)


def _shape_key(item: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v.shape) if hasattr(v, "shape") else type(v).__name__) for k, v in item.items()))


def _collated_rows(task: TaskData, items: list[dict[str, Any]], chunk: int) -> list[dict[str, np.ndarray]]:
    rows: list[dict[str, np.ndarray] | None] = [None] * len(items)
    buckets: dict[tuple, list[int]] = defaultdict(list)
    for position, item in enumerate(items):
        buckets[_shape_key(item)].append(position)
    for positions in buckets.values():
        for start in range(0, len(positions), chunk):
            part = positions[start : start + chunk]
            batch = {}
            if len(part) > 1:
                batch = {
                    k: a
                    for k, v in task.collate([items[p] for p in part]).items()
                    if (a := _as_array(v, squeeze=False)) is not None
                }
            if len(part) == 1 or not all(a.ndim >= 1 and a.shape[0] == len(part) for a in batch.values()):
                for p in part:  # one example, or a batch that is not one row per example: alone
                    rows[p] = {k: a for k, v in task.collate([items[p]]).items() if (a := _as_array(v)) is not None}
                continue
            for row, p in enumerate(part):
                rows[p] = {k: a[row] for k, a in batch.items()}
    return rows


def _id_keys(rows: list[dict[str, np.ndarray]]) -> list[str]:
    """Batch keys holding one integer per example, different on every example: ids, not content — unless
    nothing else would be left of the example but its label."""
    if len(rows) < 2:
        return []
    keys = []
    for key in rows[0]:
        if key in ("index", "labels"):
            continue
        values = [row.get(key) for row in rows]
        if all(v is not None and v.size == 1 and np.issubdtype(v.dtype, np.integer) for v in values):
            if len({int(v.reshape(-1)[0]) for v in values}) == len(values):
                keys.append(key)
    content = [key for key in rows[0] if key not in ("index", "labels", *keys) and not _same_in_every(rows, key)]
    return keys if content else []  # a one-token input (a character, an item id) is the example's content


def _same_in_every(rows: list[dict[str, np.ndarray]], key: str) -> bool:
    """``key`` holds the same value in every row (a mask of ones beside one-token inputs): no content."""
    first = rows[0].get(key)
    return first is not None and all(
        (v := row.get(key)) is not None and v.shape == first.shape and np.array_equal(v, first) for row in rows
    )


def example_digest(parts: dict[str, np.ndarray], label: np.ndarray) -> str:
    sha = hashlib.sha1()
    for key in sorted(parts):
        value = np.ascontiguousarray(parts[key])
        sha.update(f"{key}|{value.dtype.str}|{value.shape}|".encode())
        sha.update(value.tobytes())
    label = np.ascontiguousarray(label)
    sha.update(f"labels|{label.dtype.str}|{label.shape}|".encode())
    sha.update(label.tobytes())
    return sha.hexdigest()


def vector_key(views: ModelViews) -> str | None:
    """The one floating-point input every example has, at one shape: a vector task's features."""
    rows = [row for s in views.order() for row in views.inputs[s]]
    if not rows:
        return None
    floats = [k for k, v in rows[0].items() if np.issubdtype(v.dtype, np.floating)]
    if len(floats) != 1:
        return None
    key = floats[0]
    shape = rows[0][key].shape
    if not all(key in row and row[key].shape == shape for row in rows) or int(np.prod(shape)) < 1:
        return None
    return key


def train_group_halves(views: ModelViews) -> np.ndarray:
    """Which training examples fall in the first of two halves of train's groups (shuffled, seeded): the
    baseline a split by group gives with nothing wrong, which the detectors compare a later split with."""
    groups = [example.group for example in views.splits["train"]]
    names = sorted(set(groups), key=str)
    np.random.default_rng(0).shuffle(names)
    first = set(names[: len(names) // 2])
    return np.array([group in first for group in groups], dtype=bool)


def feature_matrix(views: ModelViews, key: str, split: str) -> np.ndarray:
    rows = views.inputs[split]
    return np.stack([row[key].reshape(-1) for row in rows]).astype(np.float64) if rows else np.zeros((0, 0))


def scalar_labels(views: ModelViews, split: str) -> np.ndarray | None:
    labels = views.labels[split]
    if not labels or not all(label.size == 1 for label in labels):
        return None
    return np.array([label.reshape(-1)[0] for label in labels])


def changes_the_batch(task: TaskData, example: Example, name: str, value: Any) -> bool:
    """Whether ``example`` with its field ``name`` set to ``value`` encodes and collates to other tensors: the
    field reaches the model (an encode that cannot do with that value: it reads the field too)."""
    other = dataclasses.replace(example, fields={**example.fields, name: value})
    try:
        before, after = task.collate([task.encode(example)]), task.collate([task.encode(other)])
    except Exception:  # noqa: BLE001 - a field encode cannot do without: it reaches the model
        return True
    return any(
        not (torch.is_tensor(after.get(k)) and v.shape == after[k].shape and torch.equal(v, after[k]))
        for k, v in before.items()
        if torch.is_tensor(v) and k != "index"
    )


_LOOKS = (str.upper, lambda text: text + "!!", lambda text: "  ".join(text.split()))  # case, punctuation, spaces


def untouched_by(task: TaskData, views: ModelViews, fields: list[str], tries: int = 3) -> dict[str, np.ndarray]:
    """Input key -> the positions of its array that ``fields`` (texts) do not move, for the keys of one shape in
    every example: the first example collated with the texts of ``tries`` other examples in place of its own,
    and with its own upper-cased, ending in "!!" and spaced twice (what a normalised text comparison ignores).
    A key whose shape the texts change is theirs alone (left out); {} where nothing can be compared."""
    rows = [(e, row) for s in views.order() for e, row in zip(views.splits[s], views.inputs[s])]
    if views.skipped or len(rows) < 2:
        return {}
    example, row = rows[0]
    keys = [k for k, v in row.items() if all(k in r and r[k].shape == v.shape for _, r in rows)]
    kept = {k: np.ones(row[k].shape, dtype=bool) for k in keys}
    own = {f: str(example.fields.get(f)) for f in fields}
    replacements = [{f: other.fields.get(f) for f in fields} for other, _ in rows[1 : 1 + tries]]
    replacements += [{f: change(t) for f, t in own.items()} for change in _LOOKS]  # what normalising ignores
    for replacement in replacements:
        moved = dataclasses.replace(example, fields={**example.fields, **replacement})
        try:
            batch = task.collate([task.encode(moved)])
        except Exception:  # noqa: BLE001 - texts encode cannot take in another example: nothing compared
            return {}
        for k in list(kept):
            after = _as_array(batch.get(k))
            if after is None or after.shape != row[k].shape:
                del kept[k]
            else:
                kept[k] &= after == row[k]
    return kept
