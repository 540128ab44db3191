"""Leaks a task did not declare, found from the data itself (part of step 2, the split audit).

The split audit checks what a task *declares*: groups, raw content, a time split. These
detectors look for what it did not declare:

1. **Id-like fields shared across splits** (``id_field_warnings``). A raw field is id-like when
   its values repeat within a split (several examples per value), it has at least
   ``id_min_distinct`` distinct values (a categorical feature with few values never qualifies),
   and either a word of its name says identifier (``ID_WORDS``: ``patient_id``, ``userId``,
   ``session``, ``doc``...) or its values look like one (strings without whitespace that carry a
   digit: ``P0042``, ``user-17``, a hash). Numbers that are features (``age``, counts) are not
   id-like unless their name says so. Skipped: the declared group (a field one-to-one with
   ``Example.group``) and the target (a field one-to-one with the encoded label, or the
   task's ``raw_label``). Warn when at least ``id_min_shared`` of a split's values, and
   ``id_min_shared_share`` of them, are also in an earlier split.
2. **Duplicates behind ids** (``duplicate_findings``). What the model sees — the collated
   tensors of each example alone, without ``index`` and without integer scalars that are
   distinct on every example (ids) — is hashed with its label: equal hashes in two splits are a
   ``fail``, as are texts equal after normalisation (Unicode NFKC, case, punctuation,
   whitespace). Near-duplicates are a ``warn``: vector inputs at an RMS distance per
   standardised feature below ``near_dup_rms`` and below ``near_dup_relative`` of the median
   nearest distance between the two splits; texts (the raw string fields of several words)
   whose normalised character ``shingle``-grams overlap (Jaccard) at least ``shingle_jaccard``
   *and* whose targets agree (equal class, or target tokens overlapping as much): a template
   filled with another word and another answer is not one (counted, not flagged).
3. **Time-stamped data split at random** (``time_warnings``): with every example timed and a split
   not by time, warn when more than ``time_inside_share`` of a later split's times fall strictly
   inside the training range. Not when the time is a property of the declared group (every group
   of two or more examples has one time and such groups hold most examples): the group split then
   keeps each moment on one side (the embedded instruction data: one time per document).
4. **Target leakage** (``target_leak_warnings``): for vector inputs with one label per example, a
   single input feature whose |Pearson correlation| with the label, or whose best single
   threshold's balanced accuracy for one class against the rest, is at least ``leak_score``.

Cost: examples of equal shapes are collated together, hashing is linear; nearest neighbours are
chunked matrix products (O(n_a x n_b x features)); shingle overlaps a sort-join over shingle ids
(only pairs sharing a shingle are formed); the threshold scan sorts each feature once. The whole
split audit takes about 0.2 s on digits (1,797 vectors) and 0.1 s on the 733 instructions
(2-core CPU), most of it the task's own encode and collate.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, Example, TaskData

# words of a field name that say "identifier" (the name is cut at _ - . spaces and camelCase):
# patient_id, userId, session, doc, source_file...
ID_WORDS = frozenset(
    """id ids uid pid uuid guid key patient user subject session speaker author customer
client account device doc docs document conversation thread dialog dialogue source file url path
hospital site writer record participant person household visitor member owner""".split()
)
SPLIT_ORDER = ("train", "val", "test")


@dataclass(frozen=True)
class LeakThresholds:
    """Declared thresholds of the leak detectors (module defaults; see the module docstring)."""

    id_min_distinct: int = 20  # an id-like field has at least this many distinct values
    id_min_shared: int = 2  # warn when at least this many of a split's values are in an earlier split
    id_min_shared_share: float = 0.1  # ... and at least this share of them
    near_dup_rms: float = 0.05  # vectors: RMS difference per standardised feature below this ...
    near_dup_relative: float = 0.1  # ... and below this share of the median nearest distance between
    # the two splits (in few dimensions close pairs occur by chance)
    shingle: int = 5  # texts: shingles of this many characters of normalised text
    # (of tokens, for a sequence target)
    shingle_jaccard: float = 0.8  # texts: near-duplicate at this Jaccard overlap of shingles or more
    time_inside_share: float = 0.2  # warn when more than this share of a split's times is inside train's range
    leak_score: float = 0.99  # one feature's |correlation| or single-threshold balanced accuracy
    leak_min_examples: int = 30  # target leakage: at least this many labelled examples ...
    leak_min_class: int = 10  # ... and this many of a class (and of the rest) to test it
    listed: int = 3  # example pairs listed per finding
    max_vector_features: int = 4096  # near-duplicates and leakage of vectors up to this many features
    max_pairs: int = 500_000_000  # near-duplicate search per pair of splits: at most this many
    # candidate pairs (vectors: n_a x n_b; texts: pairs sharing a shingle)


# --------------------------------------------------------------------------- what the model sees
@dataclass
class ModelViews:
    """Per split, what reaches the model for each example alone (no padding), ids removed."""

    splits: dict[str, list[Example]]
    inputs: dict[str, list[dict[str, np.ndarray]]]
    labels: dict[str, list[np.ndarray]]
    dropped_keys: list[str]  # batch keys left out: index and per-example integer ids
    skipped: str = ""  # why there are no views (no encode/collate, or they raised)

    def order(self) -> list[str]:
        return [s for s in _ordered(self.splits) if self.splits[s]]


def _ordered(splits: dict[str, Any]) -> list[str]:
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
    """Batch keys holding one integer per example, different on every example: ids, not content."""
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
    return keys


def _digest(parts: dict[str, np.ndarray], label: np.ndarray) -> str:
    sha = hashlib.sha1()
    for key in sorted(parts):
        value = np.ascontiguousarray(parts[key])
        sha.update(f"{key}|{value.dtype.str}|{value.shape}|".encode())
        sha.update(value.tobytes())
    label = np.ascontiguousarray(label)
    sha.update(f"labels|{label.dtype.str}|{label.shape}|".encode())
    sha.update(label.tobytes())
    return sha.hexdigest()


def _vector_key(views: ModelViews) -> str | None:
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


def _matrix(views: ModelViews, key: str, split: str) -> np.ndarray:
    rows = views.inputs[split]
    return np.stack([row[key].reshape(-1) for row in rows]).astype(np.float64) if rows else np.zeros((0, 0))


def _scalar_labels(views: ModelViews, split: str) -> np.ndarray | None:
    labels = views.labels[split]
    if not labels or not all(label.size == 1 for label in labels):
        return None
    return np.array([label.reshape(-1)[0] for label in labels])


# --------------------------------------------------------------------------- 7. id-like fields
def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _looks_like_id(values: Sequence[Any]) -> bool:
    text = [v for v in values if isinstance(v, str)]
    if len(text) < len(values):
        return False
    shaped = sum(1 for v in text if v and not any(c.isspace() for c in v) and any(c.isdigit() for c in v))
    return shaped >= 0.9 * len(text)


def name_says_id(name: str) -> bool:
    """``patient_id``, ``userId``, ``session``, ``docid``: a word of the name is an identifier word."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    words = re.split(r"[^a-z0-9]+", words)
    return any(w in ID_WORDS or (len(w) > 2 and w.endswith("id") and w[:-2] in ID_WORDS) for w in words)


def _one_to_one(pairs: Sequence[tuple[Any, Any]]) -> bool:
    forward, backward = {}, {}
    for a, b in pairs:
        if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
            return False
    return True


def id_field_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    examples = [(s, e) for s in _ordered(task.splits) for e in task.splits[s]]
    if not examples:
        return [], {}
    names = sorted({name for _, e in examples for name in e.fields})
    label_keys: dict[int, str] = {}
    raw_label = _raw_label_reader(task)
    warnings, report = [], {}
    for name in names:
        if not _is_scalar(examples[0][1].fields.get(name)):  # arrays, floats, lists: not ids
            continue
        values = [(s, e, e.fields.get(name)) for s, e in examples]
        if not all(_is_scalar(v) for _, _, v in values):
            continue
        plain = [v.item() if isinstance(v, np.integer) else v for _, _, v in values]
        distinct = set(plain)
        per_split = defaultdict(Counter)
        for (split, _, _), value in zip(values, plain):
            per_split[split][value] += 1
        repeats = any(c > 1 for counter in per_split.values() for c in counter.values())
        id_like = name_says_id(name) or _looks_like_id(plain)
        if not (repeats and id_like and len(distinct) >= limits.id_min_distinct):
            continue
        if _one_to_one([(v, e.group) for (_, e, _), v in zip(values, plain)]):
            report[name] = "the declared group"
            continue
        if not label_keys and not views.skipped:
            label_keys = {
                id(example): _digest({}, label)
                for split in views.order()
                for example, label in zip(views.splits[split], views.labels[split])
            }
        if label_keys and _one_to_one([(v, label_keys.get(id(e))) for (_, e, _), v in zip(values, plain)]):
            report[name] = "the target (one-to-one with the encoded label)"
            continue
        if raw_label is not None and all(raw_label(e) == v for (_, e, _), v in zip(values, plain)):
            report[name] = "the target (the task's raw label)"
            continue
        order = [s for s in _ordered(per_split) if per_split[s]]
        shared_report = {}
        for i, later in enumerate(order[1:], start=1):
            earlier = set().union(*(per_split[s] for s in order[:i]))
            mine = set(per_split[later])
            shared = mine & earlier
            where = order[0] if i == 1 else "/".join(order[:i])
            shared_report[later] = {"values": len(mine), "shared": len(shared), "with": where}
            if len(shared) >= limits.id_min_shared and len(shared) >= limits.id_min_shared_share * len(mine):
                sample = ", ".join(repr(v) for v in sorted(shared, key=str)[: limits.listed])
                warnings.append(
                    Finding(
                        f"field '{name}': {len(shared)} of {len(mine)} {later} values also in {where}; is it the group?",
                        detail=f"e.g. {sample}; {len(distinct)} distinct values, {len(plain) / len(distinct):.1f} "
                        f"examples per value. If a value's examples belong together, make '{name}' the "
                        f"Example.group and split by group",
                    )
                )
        report[name] = shared_report
    return warnings, report


def _raw_label_reader(task: TaskData):
    """The task's declared raw label reader (``TaskData.raw_label``), if this TaskData has one."""
    reader = getattr(task, "raw_label", None)
    return reader if callable(reader) else None


# --------------------------------------------------------------------------- 8. duplicates
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


def duplicate_findings(
    task: TaskData, views: ModelViews, raw_hash, limits: LeakThresholds, skipped: list[str] | None = None
) -> tuple[list[Finding], list[Finding], dict[str, Any]]:
    """(fails, warnings, per pair of splits: counts and examples); a search too large for the
    declared limits is left out and said so in ``skipped``."""
    skipped = skipped if skipped is not None else []
    fails, warnings = [], []
    report: dict[str, Any] = {}
    order = views.order() if not views.skipped else [s for s in _ordered(task.splits) if task.splits[s]]
    raw_keys = {s: [raw_hash(e) for e in task.splits[s]] for s in order}
    pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
    reported = set()  # (split, index) of examples already reported as copies: never counted twice
    for a, b in pairs:  # raw-identical copies: the split audit's own finding
        earlier = set(raw_keys[a])
        reported.update((b, e.index) for e, raw in zip(task.splits[b], raw_keys[b]) if raw in earlier)

    def note(pair, kind, count, listed):
        report.setdefault(f"{pair[0]}/{pair[1]}", {})[kind] = {"count": count, "examples": listed}

    # exact: what the model sees, with its label
    if not views.skipped:
        digests = {s: [_digest(x, y) for x, y in zip(views.inputs[s], views.labels[s])] for s in order}
        for a, b in pairs:
            first = {}
            for example, digest in zip(views.splits[a], digests[a]):
                first.setdefault(digest, (example.index,))
            hits = []
            for example, digest in zip(views.splits[b], digests[b]):
                if digest in first and (b, example.index) not in reported:  # raw copies: reported already
                    hits.append((first[digest][0], example.index))
            listed = [f"{a} example {i} = {b} example {j}" for i, j in hits[: limits.listed]]
            note((a, b), "same_model_input_and_label", len(hits), listed)
            if hits:
                reported.update((b, j) for _, j in hits)
                fails.append(
                    Finding(
                        f"{len(hits)} {b} example(s) identical to a {a} example in what the model sees "
                        f"(inputs and label) behind different raw fields: {'; '.join(listed)}",
                        detail="ids or other fields the model never reads differ; drop the copies or group them",
                    )
                )

    # normalised text
    fields = text_fields(task)
    if fields:
        keys = {s: [normalise_text(" \x1f ".join(e.fields[f] for f in fields)) for e in task.splits[s]] for s in order}
        for a, b in pairs:
            first = {}
            for example, key in zip(task.splits[a], keys[a]):
                first.setdefault(key, example.index)
            hits = [
                (first[k], e.index)
                for e, k in zip(task.splits[b], keys[b])
                if k in first and (b, e.index) not in reported
            ]
            listed = [f"{a} example {i} = {b} example {j}" for i, j in hits[: limits.listed]]
            note((a, b), "same_text_normalised", len(hits), listed)
            if hits:
                reported.update((b, j) for _, j in hits)
                fails.append(
                    Finding(
                        f"{len(hits)} {b} example(s) with the same text as a {a} example after normalising case, "
                        f"punctuation and whitespace (fields {fields}): {'; '.join(listed)}"
                    )
                )

    if views.skipped:
        return fails, warnings, report
    vector = _vector_key(views)
    if vector is not None:
        warnings += _vector_near_duplicates(views, vector, pairs, reported, limits, note, skipped)
    elif fields:
        warnings += _text_near_duplicates(task, views, fields, pairs, reported, limits, note, skipped)
    return fails, warnings, report


def _standardise(views: ModelViews, key: str) -> dict[str, np.ndarray]:
    matrices = {s: _matrix(views, key, s) for s in views.order()}
    stacked = np.concatenate(list(matrices.values()))
    mean, std = stacked.mean(axis=0), stacked.std(axis=0)
    varies = std > 1e-12 * max(1.0, float(np.abs(stacked).max()))
    return {s: (m[:, varies] - mean[varies]) / std[varies] for s, m in matrices.items()}


def nearest(query: np.ndarray, base: np.ndarray, chunk_cells: int = 4_000_000) -> tuple[np.ndarray, np.ndarray]:
    """For each query row, the index of the nearest base row and the RMS distance per feature."""
    features = max(1, query.shape[1])
    base_sq = (base * base).sum(axis=1)
    best_d, best_i = np.empty(len(query)), np.empty(len(query), dtype=np.int64)
    step = max(1, chunk_cells // max(1, len(base)))
    for start in range(0, len(query), step):
        q = query[start : start + step]
        d2 = (q * q).sum(axis=1)[:, None] + base_sq[None, :] - 2.0 * (q @ base.T)
        idx = d2.argmin(axis=1)
        best_i[start : start + step] = idx
        best_d[start : start + step] = np.sqrt(np.maximum(d2[np.arange(len(q)), idx], 0.0) / features)
    return best_d, best_i


def _vector_near_duplicates(views, key, pairs, reported, limits, note, skipped) -> list[Finding]:
    features = int(np.prod(views.inputs[views.order()[0]][0][key].shape))
    if features > limits.max_vector_features:
        skipped.append(
            f"near-duplicate vectors: {features} features > max_vector_features {limits.max_vector_features}"
        )
        return []
    z = _standardise(views, key)
    warnings = []
    for a, b in pairs:
        if not len(z[a]) or not len(z[b]) or not z[a].shape[1]:
            continue
        if len(z[a]) * len(z[b]) > limits.max_pairs:
            skipped.append(
                f"near-duplicate vectors {a}/{b}: {len(z[a])} x {len(z[b])} pairs > max_pairs {limits.max_pairs}"
            )
            continue
        dist, idx = nearest(z[b], z[a])
        labels_a, labels_b = _scalar_labels(views, a), _scalar_labels(views, b)
        typical = float(np.median(dist))
        cutoff = min(limits.near_dup_rms, limits.near_dup_relative * typical)
        hits = [
            (int(idx[j]), j, float(dist[j]))
            for j in np.flatnonzero(dist < cutoff)
            if (b, views.splits[b][j].index) not in reported
        ]
        same = sum(
            1 for i, j, _ in hits if labels_a is not None and labels_b is not None and labels_a[i] == labels_b[j]
        )
        listed = [
            f"{a} example {views.splits[a][i].index} ~ {b} example {views.splits[b][j].index} (RMS {d:.3g})"
            for i, j, d in sorted(hits, key=lambda h: h[2])[: limits.listed]
        ]
        note((a, b), "near_duplicate_vectors", len(hits), listed)
        if hits:
            label_note = f", {same} with the same label" if labels_a is not None else ""
            warnings.append(
                Finding(
                    f"{len(hits)} {b} example(s) within RMS {limits.near_dup_rms} (per standardised feature) "
                    f"of a {a} example{label_note}: {'; '.join(listed)}",
                    detail=f"near-duplicates: a {b} example's nearest {a} example is usually much farther "
                    f"(median {typical:.3g}); drop the copies or group them",
                )
            )
    return warnings


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


def _text_near_duplicates(task, views, fields, pairs, reported, limits, note, skipped) -> list[Finding]:
    vocab: dict[Any, int] = {}
    texts = {
        s: _ShingleSets(
            [_shingles(normalise_text(" ".join(e.fields[f] for f in fields)), limits.shingle) for e in views.splits[s]],
            vocab,
        )
        for s in views.order()
    }
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
        if hits:
            warnings.append(
                Finding(
                    f"{len(hits)} {b} example(s) nearly the same text as a {a} example ({limits.shingle}-character "
                    f"shingles overlapping >= {limits.shingle_jaccard}) with the same target: {'; '.join(listed)}",
                    detail="near-duplicates (edited, re-encoded or templated copies); drop them or group them",
                )
            )
    return warnings


# --------------------------------------------------------------------------- 9. time
def time_warnings(task: TaskData, split_by: str, limits: LeakThresholds) -> tuple[list[Finding], dict[str, Any]]:
    examples = [e for ex in task.splits.values() for e in ex]
    if split_by == "time" or not examples or any(e.time is None for e in examples):
        return [], {}
    train = [float(e.time) for e in task.splits.get("train", [])]
    if not train:
        return [], {}
    low, high = min(train), max(train)
    per_group = defaultdict(set)
    sizes = Counter(e.group for e in examples)
    for e in examples:
        per_group[e.group].add(float(e.time))
    in_shared = sum(sizes[g] for g in sizes if sizes[g] > 1)
    group_time = in_shared >= 0.5 * len(examples) and all(len(per_group[g]) == 1 for g in sizes if sizes[g] > 1)
    report: dict[str, Any] = {"train_range": [low, high], "time_is_a_group_property": group_time}
    warnings = []
    for split in _ordered(task.splits):
        if split == "train" or not task.splits[split]:
            continue
        times = np.array([float(e.time) for e in task.splits[split]])
        inside = int(((times > low) & (times < high)).sum())
        share = inside / len(times)
        report[split] = {"inside_train_range": inside, "examples": len(times), "share": round(share, 4)}
        if share > limits.time_inside_share and not group_time:
            warnings.append(
                Finding(
                    f"{inside} of {len(times)} {split} times ({share:.0%}) fall inside the training range "
                    f"[{low:g}, {high:g}]: time-stamped data split by {split_by}, not by time",
                    detail="validation measures interpolation between training times, not the future; "
                    "data.split.by=time if the model will face later data",
                )
            )
    return warnings, report


# --------------------------------------------------------------------------- 10. target leakage
def best_threshold_balanced_accuracy(features: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """Best balanced accuracy of one threshold (either direction) per feature column (axis 1) and
    per class (``positives``: examples x classes, 1 for a member): returns classes x features."""
    n = len(features)
    order = np.argsort(features, axis=0, kind="stable")
    values = np.take_along_axis(features, order, axis=0)
    cut = values[1:] > values[:-1]  # only between distinct values
    scores = []
    for positive in positives.T:
        pos_below = np.cumsum(positive[order], axis=0)[:-1]  # rows 0..i fall below cut i
        neg_below = np.arange(1, n)[:, None] - pos_below
        total_pos, total_neg = positive.sum(), n - positive.sum()
        score = 0.5 * ((total_pos - pos_below) / total_pos + neg_below / total_neg)
        score = np.where(cut, np.maximum(score, 1.0 - score), 0.5)
        scores.append(score.max(axis=0) if len(score) else np.full(features.shape[1], 0.5))
    return np.array(scores).reshape(len(scores), features.shape[1])


def target_leak_warnings(
    task: TaskData, views: ModelViews, limits: LeakThresholds
) -> tuple[list[Finding], dict[str, Any]]:
    key = None if views.skipped else _vector_key(views)
    if key is None:
        return [], {}
    features = int(np.prod(views.inputs[views.order()[0]][0][key].shape))
    if features > limits.max_vector_features:
        return [], {"skipped": f"{features} features > max_vector_features {limits.max_vector_features}"}
    splits = views.order()
    labels = [_scalar_labels(views, s) for s in splits]
    if any(y is None for y in labels):
        return [], {}
    features = np.concatenate([_matrix(views, key, s) for s in splits])
    label = np.concatenate(labels).astype(np.float64)
    counted = label != IGNORE_INDEX  # an example outside the loss has no label to leak
    features, label = features[counted], label[counted]
    if len(label) < limits.leak_min_examples or features.shape[1] == 0:
        return [], {}
    names = list(task.info.get("feature_names") or [])
    if len(names) != features.shape[1]:
        names = [f"{key}[{j}]" for j in range(features.shape[1])]
    std = features.std(axis=0)
    centred = (features - features.mean(axis=0)) * (std > 0)
    label_std = label.std()
    corr = np.zeros(features.shape[1])
    if label_std > 0:
        corr = np.abs(centred.T @ (label - label.mean())) / (len(label) * np.where(std > 0, std, 1.0) * label_std)
    integral = np.all(label == np.round(label))
    classes = np.unique(label) if integral else np.array([])
    if len(classes) == 2:
        classes = classes[1:]
    separation = np.full(features.shape[1], 0.5)
    best_class = np.full(features.shape[1], np.nan)
    tested = [c for c in classes if min((label == c).sum(), (label != c).sum()) >= limits.leak_min_class]
    if tested:
        positives = np.stack([(label == c) for c in tested], axis=1).astype(np.int64)
        scores = best_threshold_balanced_accuracy(features, positives)
        separation = scores.max(axis=0)
        best_class = np.array(tested)[scores.argmax(axis=0)]
    class_names = _class_names(task)
    warnings = []
    for j in np.flatnonzero((corr >= limits.leak_score) | (separation >= limits.leak_score)):
        parts = []
        if corr[j] >= limits.leak_score:
            parts.append(f"|correlation| {corr[j]:.3f} with the label")
        if separation[j] >= limits.leak_score:
            cls = int(best_class[j])
            name = f" '{class_names[cls]}'" if 0 <= cls < len(class_names) else ""
            parts.append(
                f"one threshold separates class {cls}{name} from the rest at balanced accuracy {separation[j]:.3f}"
            )
        warnings.append(
            Finding(
                f"feature '{names[j]}' gives the label away: {' and '.join(parts)}",
                detail="target leakage? a feature computed from (or recorded after) the label; "
                "drop it unless the model will have it when it predicts",
            )
        )
    top = int(np.argmax(np.maximum(corr, separation)))
    report = {
        "features": int(features.shape[1]),
        "examples": int(len(label)),
        "max_abs_correlation": round(float(corr.max()), 4),
        "max_threshold_balanced_accuracy": round(float(separation.max()), 4),
        "most_telling_feature": names[top],
    }
    return warnings, report


def _class_names(task: TaskData) -> list[str]:
    """Class names by id: ``TaskData.names()`` where this TaskData has it, else ``info["class_names"]``."""
    names = getattr(task, "names", None)
    if callable(names):
        return list(names())
    return [str(n) for n in (task.info.get("class_names") or [])]


def thresholds_dict(limits: LeakThresholds) -> dict[str, Any]:
    return asdict(limits)


__all__ = [
    "LeakThresholds",
    "ModelViews",
    "model_views",
    "id_field_warnings",
    "duplicate_findings",
    "time_warnings",
    "target_leak_warnings",
    "normalise_text",
    "text_fields",
    "nearest",
    "best_threshold_balanced_accuracy",
    "thresholds_dict",
    "name_says_id",
]
