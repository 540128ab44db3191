"""Part of ``inspect``: the class ids in the collated labels against the raw class names the task
declares (``class_names`` and ``raw_label`` or an example's ``label_name``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pilot.checks.collated import RowView
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, RAW_LABEL_FIELD, TaskData


def name_findings(task: TaskData, views: list[RowView], class_names: list[str]) -> list[Finding]:
    """The ids in the collated labels against the raw class names the task declares.

    Finds a class encoded with different ids in different splits (each split encoded on its own),
    one id standing for two classes, and ids the mapping names otherwise (a shift), naming the class.
    """
    findings: list[Finding] = []
    name_ids: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    id_names: dict[int, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    unknown: dict[str, list[int]] = defaultdict(list)
    classless: dict[int, list[int]] = defaultdict(list)  # examples the raw data gives no class, by the id trained
    classless_splits: dict[int, set] = defaultdict(set)
    for view in views:
        name = task.raw_class_name(view.example)
        if name is None and view.values and _declares_raw_label(task, view.example):
            classless[view.values[0]].append(view.example.index)
            classless_splits[view.values[0]].add(view.split)
        if name is None or not view.values:
            continue
        name_ids[name][view.split].add(view.values[0])
        id_names[view.values[0]][name].add(view.split)
        if class_names and name not in class_names:
            unknown[name].append(view.example.index)
    for name, examples in unknown.items():
        findings.append(Finding(f"class '{name}' (examples {examples[:5]}) is not in class_names {class_names}"))
    for label, examples in classless.items():
        named = f" ('{class_names[label]}')" if 0 <= label < len(class_names) else ""
        findings.append(
            Finding(
                f"{len(examples)} example(s) the raw data gives no class (raw label None: examples {examples[:5]}) "
                f"are {_used_as(classless_splits[label])} class id {label}{named}. Fix: give a missing label "
                f"{IGNORE_INDEX}, which the loss ignores, not a class id"
            )
        )
    for name, per_split in name_ids.items():
        ids = {i for split_ids in per_split.values() for i in split_ids}
        if len(ids) > 1:
            where = ", ".join(f"{s}: {_ids(v)}" for s, v in sorted(per_split.items()))
            right = f"; class_names gives it id {class_names.index(name)}" if name in class_names else ""
            findings.append(
                Finding(
                    f"class '{name}' has different ids across or within splits ({where}{right})",
                    detail="the label encodings disagree; one mapping must serve every split",
                )
            )
        elif class_names and 0 <= next(iter(ids)) < len(class_names) and class_names[next(iter(ids))] != name:
            label = next(iter(ids))
            right = f" (class_names gives '{name}' id {class_names.index(name)})" if name in class_names else ""
            findings.append(
                Finding(
                    f"class '{name}' is encoded as id {label}, which the mapping names '{class_names[label]}'{right}"
                )
            )
    for label, per_name in sorted(id_names.items()):
        if len(per_name) > 1:
            where = " and ".join(f"'{n}' ({', '.join(sorted(s))})" for n, s in sorted(per_name.items()))
            findings.append(Finding(f"id {label} stands for two or more classes: {where}"))
    return findings


def _declares_raw_label(task: TaskData, example: Any) -> bool:
    return task.raw_label is not None or RAW_LABEL_FIELD in example.fields


def _ids(ids) -> str:
    return str(sorted(ids)) if len(ids) > 1 else str(next(iter(ids)))


def missing_classes(
    task: TaskData, views: list[RowView], class_names: list[str], num_classes: int, by_name: bool
) -> tuple[list[Finding], list[Finding]]:
    """Classes absent from a split, by name where names are declared: fail in train, warn elsewhere."""
    findings, warnings = [], []
    for split in task.splits:
        mine = [v for v in views if v.split == split]
        if not mine:
            continue
        if by_name and class_names:  # by name: an id shift must not hide the missing class
            present = {task.raw_class_name(v.example) for v in mine}
            names = [n for n in class_names if n not in present]
        else:
            present = {v.values[0] for v in mine if v.values}
            names = [class_names[c] if c < len(class_names) else str(c) for c in range(num_classes) if c not in present]
        if names:
            why = "ids of a split encoded on its own would shift"
            if len(present) == 1 and len(mine) > 1:  # one class for every example: the label ignores the example
                why = (
                    f"every one of its {len(mine)} examples has the one class {next(iter(present))!r}: a label that "
                    "does not follow the example (an answer's index taken before its options were shuffled, the "
                    "right option always first)"
                )
            finding = Finding(f"class(es) {names} missing", split, detail=why)
            (findings if split == "train" else warnings).append(finding)
    return findings, warnings


def alike_name_findings(task: TaskData) -> tuple[list[Finding], dict[str, Any]]:
    """Class names that are one name but for whitespace (``" politics"`` beside ``"politics"``): one concept
    split over two classes or tag columns, each learnt apart from the other. Case alone is not judged:
    EMNIST's 'a' and 'A' are two classes."""
    groups: dict[str, list[int]] = defaultdict(list)
    for number, name in enumerate(task.class_names or []):
        if isinstance(name, str):
            groups[" ".join(name.split())].append(number)
    twins = [ids for ids in groups.values() if len(ids) > 1]
    if not twins:
        return [], {}
    names = task.class_names
    shown = "; ".join(" and ".join(f"{names[i]!r} (id {i})" for i in ids) for ids in twins[:3])
    return [
        Finding(
            f"{len(twins)} class name(s) declared twice but for whitespace: {shown}. One concept is then two "
            "classes (or tag columns), each example positive in one of them only, and the model learns it twice, "
            "from half the examples each. pd.Series.str.get_dummies(sep=',') on 'sports, politics' keeps the space "
            "after each comma; a LabelEncoder fitted on unstripped strings does the same. Fix: strip the names before "
            "encoding them"
        )
    ], {"alike_names": [[names[i] for i in ids] for ids in twins]}


def _used_as(splits: set) -> str:
    """How examples of these splits use their label: trained towards it, or scored against it."""
    if "train" in splits:
        return "trained towards"
    return f"scored against ({', '.join(sorted(splits))} only)"


def model_label_findings(model: Any, class_names: list[str]) -> list[Finding]:
    """The model's own names of its outputs (transformers' ``config.id2label``, not its ``LABEL_<n>`` defaults)
    against the task's ``class_names``: the same classes in another order is a head trained to give each class
    another id (a fine-tuned checkpoint loaded for a task that encodes its classes otherwise): every prediction
    would be scored against another class while the loss computes. Names compared without case or spaces."""
    labels = getattr(getattr(model, "config", None), "id2label", None)
    if not isinstance(labels, dict) or not class_names:
        return []
    try:
        said = {int(i): " ".join(str(name).lower().split()) for i, name in labels.items()}
    except (TypeError, ValueError):
        return []
    ours = [" ".join(str(name).lower().split()) for name in class_names]
    if all(name.startswith("label_") for name in said.values()) or sorted(said.values()) != sorted(ours):
        return []  # transformers' defaults, or other classes (a head retrained for a new task)
    moved = [i for i in sorted(said) if i < len(ours) and said[i] != ours[i]]
    if not moved:
        return []
    shown = ", ".join(
        f"id {i}: '{labels[i] if i in labels else labels[str(i)]}' to the model, '{class_names[i]}' to the task"
        for i in moved[:3]
    )
    return [
        Finding(
            f"the model's config.id2label orders the task's classes otherwise ({shown}): its head gives each class "
            "another id than the labels it is trained and scored on. Fix: encode the labels with the model's "
            "label2id (or reorder class_names to its id2label), or pass id2label/label2id of the task's order when "
            "loading it (from_pretrained(..., id2label=..., label2id=...)) to retrain the head for that order."
        )
    ]
