"""What tells the classes apart in the raw text, erased before it reaches the model
(``erased_evidence_findings``): ``encode`` lower-cases the text (copied from an uncased pipeline) for
a task whose label is the case (shouting or calm), strips the punctuation of a task about it, drops
the digits or the accents. Both classes then look alike to the model; the loss still falls on the
training rows by memorising them, so every check that trains passes.

Seen from the data alone: a character statistic of each training example's raw text fields
(``leaks.texts.text_fields``: the share of upper-case letters, of digits, of punctuation, of non-ASCII
characters) that separates one class from the rest by one threshold (balanced accuracy >= ``RAW``),
while the same statistic of the tokens that reach the model (the collated ids decoded by the task's
``decode_tokens``, padding left out) separates it no better than ``MODEL``, and the tokens themselves
do not separate the classes either (a logistic regression on the counts of each token and token
pair, out of fold, below ``STILL``: in a spam filter that lower-cases, the words still tell spam
apart and nothing is warned). A ``warn`` naming the statistic, the class and the scores.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np
import torch

from pilot.checks.erased_scale import class_named, erased_scale_findings
from pilot.checks.leaks.target_leak import best_threshold_balanced_accuracy
from pilot.checks.leaks.texts import text_fields
from pilot.checks.loss_probe import input_ids_of, micro_batches, padding_mask, row_items
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 512  # first training examples read
MIN_ROWS = 20
MIN_CLASS = 5  # examples of the class, and of the rest
RAW = 0.95  # the raw text separates the class at least this well ...
MODEL = 0.7  # ... and what reaches the model no better than this
STILL = 0.8  # the tokens reaching the model separate the classes this well: the evidence is elsewhere too


def _share(text: str, member) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(1 for c in chars if member(c)) / len(chars) if chars else 0.0


def _upper_of_letters(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(1 for c in letters if c.isupper()) / len(letters) if letters else 0.0


STATISTICS = {
    "share of upper-case letters": _upper_of_letters,
    "share of digits": lambda text: _share(text, str.isdigit),
    "share of punctuation": lambda text: _share(text, lambda c: unicodedata.category(c).startswith("P")),
    "share of non-ASCII characters": lambda text: _share(text, lambda c: ord(c) > 127),
}


def _rows(task: TaskData, encoded: list[dict[str, Any]], micro_batch: int) -> tuple[list[str], list[list[int]], list]:
    """Per training row as collated: its raw text, its tokens that reach the model, its label."""
    fields = text_fields(task)
    train = task.splits.get("train", [])
    by_index = {example.index: example for example in train}
    raw, seen, labels = [], [], []
    for start, batch in micro_batches(task, encoded[:ROWS], micro_batch):
        ids, label, mask = input_ids_of(batch), batch.get("labels"), padding_mask(task, batch)
        if ids is None or not torch.is_tensor(label) or label.dim() != 1 or len(label) != ids.shape[0]:
            continue
        chunk = encoded[start : start + micro_batch]
        for row, item in enumerate(row_items(batch, chunk)):
            example = by_index.get(chunk[item].get("index"))
            if example is None:
                continue
            real = ids[row][mask[row]] if mask is not None else ids[row]
            raw.append(" ".join(str(example.fields[name]) for name in fields))
            seen.append(real.tolist())
            labels.append(label[row].item())
    return raw, seen, labels


def _token_separability(rows: list[list[int]], labels: np.ndarray) -> float:
    """Out-of-fold balanced accuracy of a logistic regression on the counts of each token and token pair."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import cross_val_predict

    kept = np.isin(labels, [c for c, n in zip(*np.unique(labels, return_counts=True)) if n >= MIN_CLASS])
    rows, labels = [row for row, keep in zip(rows, kept) if keep], labels[kept]
    texts = [" ".join(f"t{token}" for token in row) for row in rows]
    counts = CountVectorizer(ngram_range=(1, 2), token_pattern=r"\S+", lowercase=False).fit_transform(texts)
    folds = int(min(5, np.unique(labels, return_counts=True)[1].min()))
    predicted = cross_val_predict(LogisticRegression(max_iter=1000), counts, labels, cv=folds)
    return float(balanced_accuracy_score(labels, predicted))


def erased_evidence_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    if task.decode_tokens is None or not text_fields(task):  # numbers, not text: a level or amplitude erased?
        return erased_scale_findings(task, encoded)
    raw, ids, labels = _rows(task, encoded, micro_batch)
    seen = ["".join(task.decode_tokens(row)) for row in ids]
    values, counts = np.unique(np.array(labels), return_counts=True)
    classes = [v for v, n in zip(values, counts) if MIN_CLASS <= n <= len(labels) - MIN_CLASS]
    if len(labels) < MIN_ROWS or not classes:
        return [], {"rows_judged": len(labels)}
    members = np.stack([np.array(labels) == c for c in classes], axis=1).astype(float)
    scores: dict[str, Any] = {}
    for name, statistic in STATISTICS.items():
        before = best_threshold_balanced_accuracy(np.array([[statistic(t)] for t in raw]), members)[:, 0]
        after = best_threshold_balanced_accuracy(np.array([[statistic(t)] for t in seen]), members)[:, 0]
        scores[name] = {"raw": float(before.max()), "model": float(after[before.argmax()])}
        erased = (before >= RAW) & (after <= MODEL)
        if erased.any() and "tokens_separate" not in scores:
            scores["tokens_separate"] = _token_separability(ids, np.array(labels))
        if erased.any() and scores["tokens_separate"] < STILL:
            at = int(np.argmax(np.where(erased, before - after, -1)))
            named = class_named(task, classes[at])
            finding = Finding(
                f"the {name} of the raw text separates class {named} from the rest (balanced accuracy "
                f"{before[at]:.2f} over {len(labels)} training rows), but that of the tokens reaching the model "
                f"does not ({after[at]:.2f}), nor do its tokens ({scores['tokens_separate']:.2f}, a logistic "
                "regression on token and token-pair counts): encode erases what tells the classes apart (text lower-cased, "
                "punctuation, digits or accents stripped), and the model can only memorise the labels. Fix: "
                "keep that in the text the model reads (a cased tokenizer, no such normalisation)",
                "train",
            )
            return [finding], {"rows_judged": len(labels), "scores": scores}
    return [], {"rows_judged": len(labels), "scores": scores}
