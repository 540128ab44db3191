"""What tells the classes apart in a raw numeric field, erased before it reaches the model
(``erased_scale_findings``; the text counterpart is ``erased_evidence``): ``encode`` standardises each
example by its own mean and standard deviation (per-clip, per-image normalisation copied from a
tutorial) for a task whose classes differ in level or amplitude (a loose mount vibrating at three times
the normal amplitude, a night photo darker than a day one). Every class then reaches the model as one
distribution; the loss still falls on the training rows by memorising them.

Seen from the data alone: a statistic of each training example's raw array field (its mean, standard
deviation, mean or largest magnitude) separates one class from the rest by one threshold (balanced
accuracy >= ``RAW``), while the same statistic of the input reaching the model separates it no better
than ``MODEL``, and the model's inputs themselves do not separate the classes either (nearest
neighbours on the inputs and on their spectra, out of sample, below ``STILL``: a task whose classes
also differ in shape or frequency keeps its evidence, and nothing is warned). A ``warn``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pilot.checks.leaks.target_leak import best_threshold_balanced_accuracy
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 512  # first training examples read
MIN_ROWS, MIN_CLASS = 20, 5
MIN_VALUES = 8  # numbers a raw field needs to count as an array
MAX_VALUES = 4096  # of an input, read evenly spaced (the statistics and neighbours of a large image)
RAW, MODEL, STILL = 0.95, 0.7, 0.8
STATISTICS = {
    "mean": lambda x: float(x.mean()),
    "standard deviation": lambda x: float(x.std()),
    "mean magnitude": lambda x: float(np.abs(x).mean()),
    "largest magnitude": lambda x: float(np.abs(x).max()),
}


def class_named(task: TaskData, class_id: Any) -> Any:
    """A class id as the task names it (``class_names``), else the id."""
    names = list(task.class_names or [])
    return names[int(class_id)] if 0 <= int(class_id) < len(names) else class_id


def _array(value: Any) -> np.ndarray | None:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array.ravel() if array.size >= MIN_VALUES and np.isfinite(array).all() else None


def _model_input(batch: dict[str, Any]) -> torch.Tensor | None:
    """The batch's floating input: ``inputs``, else its first floating tensor other than the labels."""
    if torch.is_tensor(batch.get("inputs")):
        return batch["inputs"]
    return next((v for k, v in batch.items() if k != "labels" and torch.is_tensor(v) and v.is_floating_point()), None)


def _rows(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[dict[str, list], list[np.ndarray], list[int]]:
    """Per training example collated alone: its raw array fields, its floating input, its class."""
    by_index = {e.index: e for e in task.splits.get("train", [])}
    first = by_index.get(encoded[0].get("index")) if encoded else None
    if first is None or all(_array(value) is None for value in first.fields.values()):
        return {}, [], []  # no raw array field to compare with: nothing collated
    raw: dict[str, list] = {}
    seen, labels = [], []
    for item in encoded[:ROWS]:
        example = by_index.get(item.get("index"))
        batch = task.collate([item])
        label, inputs = batch.get("labels"), _model_input(batch)
        if example is None or not torch.is_tensor(label) or label.numel() != 1 or label.is_floating_point():
            continue
        if not (torch.is_tensor(inputs) and inputs.is_floating_point() and inputs.numel() >= MIN_VALUES):
            return {}, [], []
        fields = {name: _array(value) for name, value in example.fields.items()}
        for name, array in fields.items():
            raw.setdefault(name, []).append(array)
        flat = inputs.detach().double().flatten().numpy()
        seen.append(flat[:: max(1, flat.size // MAX_VALUES)])  # a large image: an even sample of its values
        labels.append(int(label.item()))
    fields = {name: arrays for name, arrays in raw.items() if all(a is not None for a in arrays)}
    return fields, seen, labels


def _still_separable(seen: list[np.ndarray], labels: np.ndarray) -> float:
    """Out-of-fold balanced accuracy of 5 nearest neighbours on the inputs and on their spectra, the better."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier

    if len({len(s) for s in seen}) != 1:
        return 1.0  # inputs of several widths: not compared, said to separate
    inputs = np.stack(seen)
    folds = int(min(5, np.unique(labels, return_counts=True)[1].min()))
    scores = []
    for view in (inputs, np.abs(np.fft.rfft(inputs, axis=1))):
        view = (view - view.mean(0)) / np.where(view.std(0) > 0, view.std(0), 1.0)
        predicted = cross_val_predict(KNeighborsClassifier(5), view, labels, cv=folds)
        scores.append(float(balanced_accuracy_score(labels, predicted)))
    return max(scores)


def erased_scale_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    fields, seen, labels = _rows(task, encoded)
    values, counts = np.unique(np.array(labels), return_counts=True)
    classes = [v for v, n in zip(values, counts) if MIN_CLASS <= n <= len(labels) - MIN_CLASS]
    if len(labels) < MIN_ROWS or not classes or not fields:
        return [], {"rows_judged": len(labels)}
    members = np.stack([np.array(labels) == c for c in classes], axis=1).astype(float)
    scores: dict[str, Any] = {}
    for field, arrays in fields.items():
        for name, statistic in STATISTICS.items():
            before = best_threshold_balanced_accuracy(np.array([[statistic(a)] for a in arrays]), members)[:, 0]
            after = best_threshold_balanced_accuracy(np.array([[statistic(s)] for s in seen]), members)[:, 0]
            scores[f"{field}: {name}"] = {"raw": float(before.max()), "model": float(after[before.argmax()])}
            erased = (before >= RAW) & (after <= MODEL)
            if erased.any() and "inputs_separate" not in scores:
                scores["inputs_separate"] = _still_separable(seen, np.array(labels))
            if not erased.any() or scores["inputs_separate"] >= STILL:
                continue
            at = int(np.argmax(np.where(erased, before - after, -1)))
            named = class_named(task, classes[at])
            finding = Finding(
                f"the {name} of the raw '{field}' separates class {named} from the rest (balanced accuracy "
                f"{before[at]:.2f} over {len(labels)} training rows), but that of the input reaching the model "
                f"does not ({after[at]:.2f}), nor does the input itself ({scores['inputs_separate']:.2f}, nearest "
                "neighbours on it and on its spectrum): encode erases what tells the classes apart (each example "
                "standardised by its own mean and standard deviation, its level or amplitude gone), and the model "
                "can only memorise the labels. Fix: standardise with statistics of the training split (one mean "
                "and standard deviation for every example)",
                "train",
            )
            return [finding], {"rows_judged": len(labels), "scores": scores}
    return [], {"rows_judged": len(labels), "scores": scores}
