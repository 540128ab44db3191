"""A leak between splits is a fail; a clean split passes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from pilot.checks.split_audit import audit_split
from pilot.data import digits, instructions
from pilot.data.task import Example, TaskData


def task_with(splits):
    return TaskData(
        kind="classification", splits=splits, encode=None, collate=None, loss_sum=None, target_count=None, predict=None
    )


def ex(index, group, text, time=None):
    return Example(index=index, group=group, fields={"text": text}, time=time)


def test_builtin_splits_pass():
    assert audit_split(instructions.make_task(split={"by": "group"})).verdict == "pass"
    result = audit_split(digits.make_task(split={"by": "group"}))
    assert result.verdict == "pass", result.reason
    assert result.details["per_split"]["train"]["examples"] > 0


def test_group_in_two_splits_fails():
    splits = {"train": [ex(0, "patient-1", "a"), ex(1, "patient-2", "b")], "val": [ex(2, "patient-1", "c")], "test": []}
    result = audit_split(task_with(splits))
    assert result.verdict == "fail"
    assert "group 'patient-1' appears in ['train', 'val']" in result.reason


def test_identical_example_in_two_splits_fails():
    splits = {"train": [ex(0, "doc-1", "same text")], "val": [ex(7, "doc-2", "same text")], "test": []}
    result = audit_split(task_with(splits))
    assert result.verdict == "fail"
    assert "train example 0, val example 7" in result.reason


def test_time_split_overlap_fails():
    splits = {
        "train": [ex(0, "a", "x", time=5.0)],
        "val": [ex(1, "b", "y", time=5.0)],
        "test": [ex(2, "c", "z", time=9.0)],
    }
    result = audit_split(task_with(splits), split_by="time")
    assert result.verdict == "fail" and "train ends at time 5.0" in result.reason


def test_a_time_split_keeps_a_group_s_past_in_train_and_its_future_later_by_design():
    """A store's sales split by time: its past trains, its future validates. Its group in two splits was
    a fail ("group 'store-0' appears in ...") although the config declared data.split.by=time; by group it
    still is."""
    splits = {
        "train": [ex(0, "store-0", "monday sales", time=1.0), ex(1, "store-1", "monday sales b", time=1.0)],
        "val": [ex(2, "store-0", "tuesday sales", time=2.0)],
        "test": [],
    }
    result = audit_split(task_with(splits), split_by="time")
    assert result.verdict == "pass", result.reason
    assert result.details["groups_in_several_splits"] == 1 and "its future validates" in result.reason
    assert audit_split(task_with(splits), split_by="group").verdict == "fail"


def test_time_split_built_by_pilot_passes():
    task = instructions.make_task(split={"by": "time", "val_fraction": 0.1, "test_fraction": 0.1})
    assert audit_split(task, split_by="time").verdict == "pass"


def test_a_detector_that_cannot_read_the_data_is_skipped_not_a_crash(monkeypatch):
    """A detector meeting data of a shape it does not expect says so in the report; the audit stands."""
    from pilot.checks import leaks

    def raises(*args):
        raise ValueError("a shape it does not expect")

    monkeypatch.setattr(leaks, "train_transform_warnings", raises)
    result = audit_split(digits.make_task(split={"by": "group"}))
    assert result.verdict == "pass", result.reason
    assert "a shape it does not expect" in result.details["undeclared"]["train_transform"]["skipped"]


def test_a_split_by_time_whose_examples_have_no_time_fails_naming_it_not_a_crash():
    """data.split.by=time over examples without Example.time: said as a finding (the audit compared None > None)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pilot.checks.split_audit import audit_split
    from tests.planted_tasks import runner

    task = runner.load("ok_one_hot_fitted_once").make_task()
    for example in task.splits["train"][:3]:
        example.time = None
    result = audit_split(task, "time")
    assert result.verdict == "fail" and "3 example(s) have no time" in result.reason, result.reason


def test_a_time_split_of_examples_without_times_names_the_setting_that_gives_them():
    """It said "add a 'time' field to the data"; data=hf_instructions reads times from data.time_field."""
    import pytest

    from pilot.data.split import split_by_time

    examples = [Example(index=i, group=str(i), fields={"instruction": "a", "answer": "b"}) for i in range(4)]
    with pytest.raises(ValueError, match=r"data.time_field=<the column that holds it>"):
        split_by_time(examples, 0.25, 0.25)


def _answer_sheets(copied: int = 0):
    """Respondents (one group each) answering 3 questions on a 1-5 scale: 125 possible sheets, so different
    respondents give the same one by chance; ``copied``: val rows that are copies of train rows."""
    import random

    rng = random.Random(0)
    sheets = [" ".join(str(rng.randint(1, 5)) for _ in range(3)) for _ in range(400)]
    train = [ex(i, f"respondent-{i}", s) for i, s in enumerate(sheets[:300])]
    val = [ex(300 + i, f"respondent-{300 + i}", s) for i, s in enumerate(sheets[300:])]
    return train, val


def test_identical_examples_that_chance_gives_a_small_input_space_warn_not_fail():
    # an outside examination, 2026-12-07: a correct survey task failed on answer sheets repeated by chance
    train, val = _answer_sheets()
    result = audit_split(task_with({"train": train, "val": val, "test": []}))
    assert result.verdict == "warn", result.reason
    assert "take few distinct values" in result.reason and "identical example(s) in two splits" in result.reason


def test_copies_across_splits_of_data_without_repeats_still_fail():
    train = [ex(i, f"doc-{i}", f"text number {i}") for i in range(300)]
    val = [ex(300 + i, f"doc-{300 + i}", f"text number {i if i < 10 else 300 + i}") for i in range(100)]
    result = audit_split(task_with({"train": train, "val": val, "test": []}))
    assert result.verdict == "fail" and "identical example in two splits" in result.reason, result.reason


def test_splits_a_task_reads_as_they_are_are_audited_by_time_where_they_follow_each_other_else_by_group():
    """A task config without data.split (its make_task reads train and validation from separate files): the
    audit read data.split.by and crashed (ConfigAttributeError), hiding what it would have found."""
    by_time = {"train": [ex(0, "s", "a", time=1.0)], "val": [ex(1, "s", "b", time=2.0)], "test": []}
    result = audit_split(task_with(by_time), None)
    assert result.verdict == "pass" and result.details["split_by"] == "time", result.reason
    assert "data.split is not in the task's config" in result.reason and not result.details["split_declared"]
    by_group = {"train": [ex(0, "s", "a", time=3.0)], "val": [ex(1, "s", "b", time=2.0)], "test": []}
    result = audit_split(task_with(by_group), None)
    assert result.verdict == "fail" and result.details["split_by"] == "group"
    assert "group 's' appears in ['train', 'val']" in result.reason


def test_a_pilot_whose_task_config_has_no_split_audits_the_tasks_own_splits(tmp_path):
    root = Path(__file__).resolve().parents[1]
    command = ["hydra.searchpath=[file://examples/my_task/conf]", "model=my_net", "data=my_data", "~data.split"]
    result = subprocess.run(
        [sys.executable, "-m", "pilot", *command, f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": "examples/my_task"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    checks = {c["step"]: c for c in json.loads((tmp_path / "run" / "checks.json").read_text())}
    assert checks["split_audit"]["verdict"] == "pass", checks["split_audit"]["reason"]
    assert "data.split is not in the task's config" in checks["split_audit"]["reason"], result.stdout[-2000:]


def test_copies_of_records_with_a_continuous_field_are_copies_whatever_field_comes_first():
    """Rare rows copied before the split, each copy its own group: a float rating of few values listed before
    the continuous measurements once decided alone, and the copies were said to be identical by chance."""
    rng = np.random.default_rng(0)
    records = [(float(rng.integers(1, 6)), rng.normal(size=8)) for _ in range(60)]
    rows = [r for k, r in enumerate(records) for _ in range(4 if k % 5 == 0 else 1)]  # oversampled
    examples = [Example(i, f"row{i}", {"rating": rating, "x": x}) for i, (rating, x) in enumerate(rows)]
    splits = {"train": examples[::2], "val": examples[1::2], "test": []}
    result = audit_split(task_with(splits))
    assert result.verdict == "fail" and "identical example in two splits" in result.reason, result.reason
