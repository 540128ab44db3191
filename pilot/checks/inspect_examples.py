"""Step 1: show the exact tensors that reach the loss, and flag what would train the wrong task.

Generation: for every example, the tokens the loss predicts (labels != -100,
after the one-token shift) are compared with the target the task *means*
(``TaskData.expected_targets``): a shorter target was truncated, a longer one
counts instruction tokens, an empty one trains nothing.
Classification: label ids within [0, classes), the model head's width equal to
the number of classes, one class-name -> id encoding shared by every split,
and every class present in every split.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from pilot.checks.result import CheckResult, Finding, summarise
from pilot.data.task import IGNORE_INDEX, TaskData

STEP = "inspect"


# ----------------------------------------------------------------------------- generation
def loss_tokens(item: Dict[str, Any]) -> List[int]:
    """Token ids the loss is asked to predict for one encoded example (position 0 has no context)."""
    labels = item["labels"][1:]
    return [int(t) for t in labels[labels != IGNORE_INDEX]]


def compare_targets(seen: List[int], expected: List[int], instruction_masked: bool) -> Optional[str]:
    """None when the loss sees what the task means; otherwise what went wrong."""
    if seen == expected:
        return None
    if not seen:
        return "no target token in the loss"
    n_seen, n_expected = len(seen), len(expected)
    if n_seen < n_expected and (expected[:n_seen] == seen or expected[-n_seen:] == seen):
        return f"target truncated: {n_expected - n_seen} of {n_expected} target tokens cut"
    if n_seen > n_expected and seen[-n_expected:] == expected:
        if instruction_masked:
            return (f"instruction tokens counted in the loss: {n_seen - n_expected} tokens before "
                    "the answer are trained although the task masks the instruction")
        return None  # the task trains the instruction on purpose (mask_instruction=false)
    return "the tokens in the loss differ from the task's target"


def render_generation(task: TaskData, batch: Dict[str, torch.Tensor], row: int) -> Dict[str, str]:
    """Three aligned lines: tokens, loss markers (^ = predicted by the loss), attention mask."""
    ids = batch["input_ids"][row].tolist()
    labels = batch["labels"][row].tolist()
    mask = batch["attention_mask"][row].tolist()
    shown = task.decode_tokens(ids) if task.decode_tokens else [str(t) for t in ids]
    marks = ["^" if position > 0 and label != IGNORE_INDEX else " "
             for position, label in enumerate(labels)]
    widths = [max(1, len(s)) for s in shown]
    return {
        "tokens": "".join(s.ljust(w) for s, w in zip(shown, widths)),
        "loss": "".join(m.ljust(w) for m, w in zip(marks, widths)),
        "mask": "".join(str(int(m)).ljust(w) for m, w in zip(mask, widths)),
    }


def _padding_share(task: TaskData, items: List[Dict[str, Any]], micro_batch: int) -> float:
    real = padded = 0
    for start in range(0, len(items), micro_batch):
        batch = task.collate(items[start:start + micro_batch])
        mask = batch.get("attention_mask")
        if mask is None:
            return 0.0
        real += int(mask.sum())
        padded += int(mask.numel())
    return 1.0 - real / padded if padded else 0.0


def inspect_generation(task: TaskData, encoded: Dict[str, List[Dict]], n_show: int,
                       micro_batch: int) -> Tuple[CheckResult, List[Dict[str, Any]]]:
    masked = bool(task.info.get("mask_instruction", True))
    findings: List[Finding] = []
    stats: Dict[str, Any] = {}
    for split, items in encoded.items():
        examples = task.splits[split]
        truncated = target_cut = target_gone = 0
        target_lengths = []
        for example, item in zip(examples, items):
            seen = loss_tokens(item)
            target_lengths.append(len(seen))
            truncated += int(item.get("truncated_tokens", 0) > 0)
            problem = compare_targets(seen, task.expected_targets(example), masked) \
                if task.expected_targets else (None if seen else "no target token in the loss")
            if problem:
                findings.append(Finding(problem, split, example.index))
                target_cut += int(problem.startswith("target truncated"))
                target_gone += int(problem == "no target token in the loss")
        n = max(1, len(items))
        stats[split] = {
            "examples": len(items), "share_truncated": truncated / n,
            "share_target_partly_cut": target_cut / n, "share_target_cut_entirely": target_gone / n,
            "share_padding": _padding_share(task, items, micro_batch),
            "target_tokens_min": min(target_lengths, default=0),
            "target_tokens_median": float(np.median(target_lengths)) if target_lengths else 0.0,
            "target_tokens_max": max(target_lengths, default=0),
        }
    shown = []
    train_items = encoded["train"][:n_show]
    if train_items:
        batch = task.collate(train_items)
        pad_side = task.info.get("padding_side", "right")
        for row, item in enumerate(train_items):
            real = int(batch["attention_mask"][row].sum())
            shown.append({
                "split": "train", "index": int(item["index"]), **render_generation(task, batch, row),
                "length": real, "padding": f"{batch['input_ids'].shape[1] - real} pad token(s) on the {pad_side}",
                "truncation": f"{item.get('truncated_tokens', 0)} token(s) cut on the "
                              f"{task.info.get('truncation_side', '?')}, "
                              f"{item.get('truncated_target_tokens', 0)} of them target",
                "loss_tokens": len(loss_tokens(item)),
                "target": "".join(task.decode_tokens(loss_tokens(item))) if task.decode_tokens
                else str(loss_tokens(item)),
            })
    train_stats = stats.get("train", {})
    ok = (f"loss sees exactly the answer tokens of all {sum(s['examples'] for s in stats.values())} "
          f"examples; {train_stats.get('share_truncated', 0):.1%} of train truncated without "
          f"cutting a target, {train_stats.get('share_padding', 0):.1%} padding")
    return summarise(STEP, findings, ok, {"per_split": stats}), shown


# ----------------------------------------------------------------------------- classification
def _label(example, item) -> int:
    return int(item.get("label", example.fields.get("label", -1)))


def inspect_classification(task: TaskData, encoded: Dict[str, List[Dict]], n_show: int,
                           model: Optional[torch.nn.Module]) -> Tuple[CheckResult, List[Dict]]:
    class_names: List[str] = list(task.info.get("class_names", []))
    num_classes = int(task.info.get("num_classes", len(class_names)))
    findings: List[Finding] = []
    warnings: List[Finding] = []
    histograms: Dict[str, Dict[int, int]] = {}
    name_to_ids: Dict[str, Dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for split, items in encoded.items():
        counts: Counter = Counter()
        for example, item in zip(task.splits[split], items):
            label = _label(example, item)
            counts[label] += 1
            if not 0 <= label < num_classes:
                findings.append(Finding(f"label {label} outside [0, {num_classes})", split, example.index))
            name = example.fields.get("label_name")
            if name is not None:
                name_to_ids[name][split].add(label)
        histograms[split] = dict(sorted(counts.items()))
    for name, per_split in name_to_ids.items():
        ids = {i for split_ids in per_split.values() for i in split_ids}
        if len(ids) > 1:
            where = ", ".join(f"{s}: {sorted(v)}" for s, v in sorted(per_split.items()))
            findings.append(Finding(f"class '{name}' has different ids across or within splits ({where})",
                                    detail="the label encodings disagree; one mapping must serve every split"))
        elif class_names and ids and 0 <= next(iter(ids)) < len(class_names) \
                and class_names[next(iter(ids))] != name:
            findings.append(Finding(f"class '{name}' is encoded as id {next(iter(ids))}, which the "
                                    f"mapping names '{class_names[next(iter(ids))]}'"))
    for split, histogram in histograms.items():
        names_here = {e.fields.get("label_name") for e in task.splits[split]} - {None}
        if names_here and class_names:  # by name: an id shift must not hide the missing class
            names = [n for n in class_names if n not in names_here]
        else:
            names = [class_names[c] if c < len(class_names) else str(c)
                     for c in range(num_classes) if c not in histogram]
        if names and encoded[split]:
            finding = Finding(f"class(es) {names} missing", split,
                              detail="ids of a split encoded on its own would shift")
            (findings if split == "train" else warnings).append(finding)
    if model is not None and encoded["train"]:
        batch = task.collate(encoded["train"][:2])
        with torch.no_grad():
            width = int(task.forward(model, batch).shape[-1])
        if width != num_classes:
            findings.append(Finding(f"model head has {width} outputs but the data has {num_classes} "
                                    "classes", detail="the loss still computes while training another task"))
    shown = []
    for example, item in list(zip(task.splits["train"], encoded["train"]))[:n_show]:
        label = _label(example, item)
        inputs = item.get("inputs")
        shown.append({"split": "train", "index": example.index, "label": label,
                      "class_name": class_names[label] if 0 <= label < len(class_names) else "?",
                      "input": (f"tensor {tuple(inputs.shape)}, min {float(inputs.min()):.3g}, "
                                f"max {float(inputs.max()):.3g}") if torch.is_tensor(inputs) else ""})
    details = {"mapping": {i: n for i, n in enumerate(class_names)}, "label_histogram": histograms}
    ok = (f"{num_classes} classes, one encoding across splits, labels in range, head of "
          f"{num_classes} outputs")
    return summarise(STEP, findings, ok, details, warnings), shown


# ----------------------------------------------------------------------------- any task
def inspect_generic(task: TaskData, encoded: Dict[str, List[Dict]], n_show: int) -> Tuple[CheckResult, List[Dict]]:
    findings = []
    for split, items in encoded.items():
        for example, item in zip(task.splits[split], items):
            if int(task.target_count(task.collate([item]))) == 0:
                findings.append(Finding("no target in the loss", split, example.index))
    shown = [{"split": "train", "index": int(item["index"]),
              "fields": {k: (tuple(v.shape) if torch.is_tensor(v) else v) for k, v in item.items()}}
             for item in encoded["train"][:n_show]]
    ok = f"every example has a target (generic checks only: task kind '{task.kind}')"
    return summarise(STEP, findings, ok, {}), shown


def inspect_task(task: TaskData, n_show: int, micro_batch: int,
                 model: Optional[torch.nn.Module] = None) -> Tuple[CheckResult, List[Dict[str, Any]]]:
    encoded = {split: task.encoded(split) for split in task.splits}
    if task.kind == "generation":
        return inspect_generation(task, encoded, n_show, micro_batch)
    if task.kind == "classification":
        return inspect_classification(task, encoded, n_show, model)
    return inspect_generic(task, encoded, n_show)
