"""Leaks a task did not declare (pilot/checks/leaks/, run by the split audit): id-like fields
shared across splits, copies behind ids, near-duplicates, time-stamped data split at random, a
feature that gives the label away. Each planted task of tests/planted_tasks is flagged naming its
cause; the built-in tasks and the correct tasks stay ``pass``."""

import dataclasses
import importlib
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests.planted_tasks is imported by its package path
    sys.path.insert(0, str(ROOT))

from pilot.checks.leaks import (  # noqa: E402
    LeakThresholds,
    best_threshold_balanced_accuracy,
    model_views,
    name_says_id,
    nearest,
    normalise_text,
)
from pilot.checks.leaks.texts import _jaccard_pairs  # noqa: E402
from pilot.checks.split_audit import audit_split  # noqa: E402
from pilot.data import digits, instructions  # noqa: E402
from pilot.data.task import Example, TaskData  # noqa: E402

# planted task -> (verdict, words the reason must hold: the check names the cause)
PLANTED = {
    "bug_groups_patient_field": ("warn", ["field 'patient_id'", "val values also in train", "is it the group?"]),
    "bug_groups_reviewer_code": ("warn", ["field 'reviewer'", "also in train"]),
    "bug_dupes_copied_rows": ("fail", ["identical to a train example in what the model sees"]),
    "bug_dupes_text_recased": ("fail", ["same text as a train example after normalising case"]),
    "bug_neardupes_augmented_vectors": ("warn", ["within RMS 0.05", "of a train example"]),
    "bug_neardupes_edited_text": ("warn", ["nearly the same text as a train example", "same target"]),
    "bug_time_random_split": ("warn", ["fall inside the training range", "not by time"]),
    "bug_leak_outcome_flag": ("warn", ["feature 'readmitted' gives the label away", "class 1 'worse'"]),
    "bug_leak_score_copy": ("warn", ["feature 'severity_score' gives the label away", "|correlation| 1.000"]),
}
CORRECT = ["ok_tabular_patient_fields", "ok_time_split_readings"]


def _audit_module(name, thresholds=None):
    module = importlib.import_module(f"tests.planted_tasks.{name}")
    split_by = getattr(module, "SETTINGS", {}).get("split_by", "group")
    return module, audit_split(module.make_task(), split_by, thresholds)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_planted_leak_is_flagged_naming_its_cause(name):
    module, result = _audit_module(name)
    verdict, words = PLANTED[name]
    assert module.EXPECTED == {"step": "split_audit", "verdict": verdict}
    assert result.verdict == verdict, result.reason
    for word in words:
        assert word in result.reason, result.reason


@pytest.mark.parametrize("name", CORRECT)
def test_correct_tabular_tasks_pass(name):
    module, result = _audit_module(name)
    assert module.EXPECTED is None
    assert result.verdict == "pass", result.reason


def test_builtin_tasks_get_no_new_alarm_and_say_why():
    result = audit_split(digits.make_task(split={"by": "group"}))
    assert result.verdict == "pass", result.reason
    target = result.details["undeclared"]["target_leakage"]
    assert target["examples"] == 1797 and target["max_threshold_balanced_accuracy"] < 0.99
    result = audit_split(instructions.make_task(split={"by": "group"}))
    assert result.verdict == "pass", result.reason
    undeclared = result.details["undeclared"]
    # the document number is the time: one time per document, the group split keeps it on one side
    assert undeclared["time"]["time_is_a_group_property"] and undeclared["time"]["val"]["share"] == 1.0
    # templated instructions ("Context: <note>. Reverse the word: X") look alike but train other answers
    assert undeclared["duplicates"]["train/val"]["similar_text_other_target"]["count"] > 0
    assert undeclared["duplicates"]["train/val"]["near_duplicate_texts"]["count"] == 0


def test_builtin_audit_stays_fast():
    for task in (digits.make_task(split={"by": "group"}), instructions.make_task(split={"by": "group"})):
        started = time.perf_counter()
        audit_split(task)
        assert time.perf_counter() - started < 5.0  # ~0.2 s on an idle 2-core machine


# ----------------------------------------------------------------------------- id-like fields
def _vector_task(rows, groups, labels=None, split_of=None, info=None):
    """A classification task over rows of raw fields, with a feature vector 'x'; split as given."""
    labels = labels if labels is not None else [0] * len(rows)
    splits = {"train": [], "val": [], "test": []}
    for i, (fields, group) in enumerate(zip(rows, groups)):
        splits[split_of(i)].append(Example(index=i, group=group, fields={**fields, "y": labels[i]}))

    def collate(items):
        return {
            "inputs": torch.stack([it["inputs"] for it in items]),
            "labels": torch.tensor([it["label"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        }

    return TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "label": e.fields["y"]},
        collate=collate,
        loss_sum=None,
        target_count=None,
        predict=None,
        info=info or {},
    )


def _random_rows(count, seed=0, width=4):
    rng = np.random.default_rng(seed)
    return [{"x": rng.normal(size=width).astype("float32")} for _ in range(count)]


def test_categorical_and_numeric_fields_shared_across_splits_are_not_ids():
    rows = _random_rows(200)
    for i, row in enumerate(rows):
        row.update(hospital=["north", "south", "east"][i % 3], age=20 + i % 60, visit_code=f"V{i % 4}")
    task = _vector_task(rows, [f"r{i}" for i in range(200)], split_of=lambda i: "train" if i % 5 else "val")
    result = audit_split(task)
    assert result.verdict == "pass", result.reason  # few values, or a number named as a feature


def test_an_id_field_that_is_the_group_or_the_target_is_skipped():
    rows = _random_rows(200)
    labels = [i % 25 for i in range(200)]
    for i, row in enumerate(rows):
        row.update(patient_id=f"P{i // 4:03d}", diagnosis_code=f"D{labels[i]:03d}")
    task = _vector_task(
        rows, [row["patient_id"] for row in rows], labels=labels, split_of=lambda i: "train" if (i // 4) % 5 else "val"
    )
    result = audit_split(task)
    assert result.verdict == "pass", result.reason
    assert result.details["undeclared"]["id_fields"] == {
        "patient_id": "the declared group",
        "diagnosis_code": "the target (one-to-one with the encoded label)",
    }


def test_id_shaped_values_and_id_names_are_recognised():
    assert name_says_id("patient_id") and name_says_id("userId") and name_says_id("PatientID")
    assert name_says_id("session") and name_says_id("docid")
    assert not any(name_says_id(n) for n in ("age", "profile", "pathology", "label_name", "answer"))
    rows = _random_rows(120)
    for i, row in enumerate(rows):
        row["who"] = f"u{(i % 30) * 7919:06x}"  # hex codes, no id word in the name
    task = _vector_task(rows, [f"r{i}" for i in range(120)], split_of=lambda i: "train" if i % 4 else "val")
    result = audit_split(task)
    assert result.verdict == "warn" and "field 'who': 15 of 15 val values also in train" in result.reason


def test_the_shared_share_threshold_is_declared():
    module = importlib.import_module("tests.planted_tasks.bug_groups_patient_field")
    result = audit_split(module.make_task(), "group", LeakThresholds(id_min_shared_share=1.01))
    assert result.verdict == "pass", result.reason


# ----------------------------------------------------------------------------- duplicates
def test_duplicates_behind_an_id_tensor_in_the_batch_are_found():
    """A collate that passes an id through: the id is dropped from what the model sees."""
    rows = _random_rows(40)
    rows = rows + [dict(rows[3])]  # example 40 copies example 3

    def collate(items):
        return {
            "inputs": torch.stack([it["inputs"] for it in items]),
            "labels": torch.zeros(len(items), dtype=torch.long),
            "record": torch.tensor([1000 + it["index"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        }

    splits = {
        "train": [Example(i, f"g{i}", {**rows[i], "source": "a"}) for i in range(40)],
        "val": [Example(40, "g40", {**rows[40], "source": "b"})],
        "test": [],
    }
    task = TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {"index": e.index, "inputs": torch.from_numpy(e.fields["x"])},
        collate=collate,
        loss_sum=None,
        target_count=None,
        predict=None,
    )
    views = model_views(task)
    assert views.dropped_keys == ["index", "record"]
    result = audit_split(task)
    assert result.verdict == "fail" and "train example 3 = val example 40" in result.reason


def test_raw_identical_copies_are_reported_once():
    rows = _random_rows(30)
    task = _vector_task(
        rows + [rows[0]], [f"g{i}" for i in range(31)], split_of=lambda i: "val" if i == 30 else "train"
    )
    result = audit_split(task)
    assert result.verdict == "fail" and len(result.findings) == 1
    assert "identical example in two splits" in result.reason


def test_near_duplicate_threshold_is_declared():
    _, result = _audit_module("bug_neardupes_augmented_vectors", LeakThresholds(near_dup_rms=0.001))
    assert result.verdict == "pass", result.reason


def test_a_search_beyond_the_declared_size_is_skipped_and_said_so():
    _, result = _audit_module("bug_neardupes_edited_text", LeakThresholds(max_pairs=10))
    assert result.verdict == "pass"
    assert "not searched: near-duplicate texts train/val" in result.reason and "> max_pairs 10" in result.reason
    _, result = _audit_module("bug_neardupes_augmented_vectors", LeakThresholds(max_vector_features=4))
    assert result.verdict == "pass" and "near-duplicate vectors: 6 features > max_vector_features 4" in result.reason


def test_normalised_text():
    assert normalise_text("  Printer: STOPPED\tworking!! ") == normalise_text("printer stopped working")
    assert normalise_text("Ｃａｆé") == "café"  # NFKC folds full-width letters


def test_nearest_matches_brute_force():
    rng = np.random.default_rng(0)
    query, base = rng.normal(size=(37, 5)), rng.normal(size=(53, 5))
    dist, idx = nearest(query, base, chunk_cells=100)
    full = np.sqrt(((query[:, None, :] - base[None, :, :]) ** 2).mean(axis=2))
    np.testing.assert_array_equal(idx, full.argmin(axis=1))
    np.testing.assert_allclose(dist, full.min(axis=1), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_jaccard_pairs_match_brute_force(threshold):
    rng = np.random.default_rng(1)
    sets_a = [set(rng.choice(30, size=rng.integers(0, 9), replace=False).tolist()) for _ in range(50)]
    sets_b = [set(rng.choice(30, size=rng.integers(0, 9), replace=False).tolist()) for _ in range(40)]
    found = {(i, j): s for i, j, s in _jaccard_pairs(sets_a, sets_b, threshold)}
    expected = {
        (i, j): len(a & b) / len(a | b)
        for (i, a), (j, b) in itertools.product(enumerate(sets_a), enumerate(sets_b))
        if a | b and len(a & b) / len(a | b) >= threshold
    }
    assert found.keys() == expected.keys()
    for key, value in expected.items():
        assert found[key] == pytest.approx(value)
    assert _jaccard_pairs([{1, 2, 3}], [{4, 5, 6}, set()], threshold) == []  # no candidate at all


# ----------------------------------------------------------------------------- time
def _timed_task(groups, times, split_of):
    rows = _random_rows(len(times))
    splits = {"train": [], "val": [], "test": []}
    for i, (group, when) in enumerate(zip(groups, times)):
        splits[split_of(i)].append(Example(index=i, group=group, fields=rows[i], time=when))
    return TaskData(
        kind="classification", splits=splits, encode=None, collate=None, loss_sum=None, target_count=None, predict=None
    )


def test_time_inside_the_training_range_warns_with_the_share():
    task = _timed_task(
        [f"g{i}" for i in range(100)], [float(i) for i in range(100)], lambda i: "val" if i % 5 == 2 else "train"
    )
    result = audit_split(task)
    assert (
        result.verdict == "warn" and "20 of 20 val times (100%) fall inside the training range [0, 99]" in result.reason
    )
    assert result.details["undeclared"]["time"]["val"]["share"] == 1.0


def test_time_ordered_or_group_timed_data_does_not_warn():
    ordered = _timed_task(
        [f"g{i}" for i in range(100)], [float(i) for i in range(100)], lambda i: "val" if i >= 80 else "train"
    )
    assert audit_split(ordered).verdict == "pass"
    # one time per group of several examples (a document's date): the group split keeps each moment together
    by_doc = _timed_task(
        [f"d{i // 5}" for i in range(100)],
        [float(i // 5) for i in range(100)],
        lambda i: "val" if (i // 5) % 5 == 2 else "train",
    )
    result = audit_split(by_doc)
    assert result.verdict == "pass" and result.details["undeclared"]["time"]["time_is_a_group_property"]


# ----------------------------------------------------------------------------- target leakage
def test_single_threshold_balanced_accuracy():
    features = np.array([[0.0, 5.0], [1.0, 1.0], [2.0, 4.0], [3.0, 2.0]])
    positive = np.array([[0], [0], [1], [1]])
    scores = best_threshold_balanced_accuracy(features, positive)
    assert scores.shape == (1, 2)
    assert scores[0, 0] == 1.0  # x > 1.5 separates exactly
    assert scores[0, 1] == 0.75  # no single cut of the second column does


def test_a_label_copy_is_not_flagged_below_the_declared_score():
    _, result = _audit_module("bug_leak_score_copy", LeakThresholds(leak_score=1.01))
    assert result.verdict == "pass", result.reason


def test_a_measurement_that_sets_one_class_of_three_apart_is_not_a_leak_but_a_flag_for_it_is():
    """Iris-like: a continuous measurement separates class 'worse' with a gap and overlaps the other two
    (genuine data does that); a 0/1 flag that is 1 exactly for 'worse' is recorded with the outcome."""
    from tests.planted_tasks._leak_tasks import MEASUREMENTS, patient_rows, tabular_task

    rows = patient_rows(patients=240, visits=1, seed=8)
    rng = np.random.default_rng(1)
    for row in rows:
        worse = row["outcome"] == "worse"
        row["x"] = np.append(row["x"], np.float32((10.0 if worse else 0.0) + rng.normal(0.0, 1.0)))
    examples = [Example(index=i, group=row["patient_id"], fields=row) for i, row in enumerate(rows)]
    result = audit_split(tabular_task(examples, feature_names=MEASUREMENTS + ["petal_length"]), "group")
    assert result.verdict == "pass", result.reason
    assert "petal_length" in str(result.details)  # said in the details, not warned
    _, flagged = _audit_module("bug_leak_outcome_flag", LeakThresholds())
    assert flagged.verdict == "warn" and "feature 'readmitted' gives the label away" in flagged.reason
    for row in rows:  # a number known only with the outcome: 0 for every other class, days for 'worse'
        row["x"][-1] = np.float32(rng.uniform(1.0, 30.0) if row["outcome"] == "worse" else 0.0)
    leak = audit_split(tabular_task(examples, feature_names=MEASUREMENTS + ["days_to_readmission"]), "group")
    assert leak.verdict == "warn" and "feature 'days_to_readmission' gives the label away" in leak.reason


def test_features_on_another_scale_warn_except_under_a_split_by_time():
    """Validation left in raw units while train was standardised warns; the same shift under a split by
    time is a trend, which later splits have by design (a false warning on a correct time-series task)."""
    from pilot.checks.leaks import LeakThresholds, feature_skew_warnings, model_views
    from tests.planted_tasks import runner

    task = runner.load("bug_val_not_standardised").make_task()
    said = audit_split(task, "group")
    assert said.verdict == "warn" and "on another scale than train's" in said.reason, said.reason
    views = model_views(task)
    assert feature_skew_warnings(task, views, LeakThresholds(), "group")[0]
    assert feature_skew_warnings(task, views, LeakThresholds(), "time") == ([], {"skipped": "split by time"})


def test_one_transformation_of_a_whole_split_warns_below_the_per_feature_limits():
    """An evaluation transform with other normalisation constants (every pixel 0.45x as wide) and targets
    taken as log10 for validation, ln for training (the inputs unmoved) warn, though no feature moves by
    5 standard deviations; their correct twins (same transforms; a training-only flip) and the same
    shifts under a split by time do not."""
    from pilot.checks.leaks import LeakThresholds, feature_skew_warnings, model_views
    from tests.planted_tasks import runner

    for bug, ok, said in (
        ("bug_eval_transform_other_normalisation", "ok_eval_transform_same_normalisation", "under one map x -> 0.4"),
        ("bug_val_log_target_other_base", "ok_log_price_target_every_split", "val targets moved while its inputs"),
    ):
        task = runner.load(bug).make_task()
        views = model_views(task)
        found = [f.problem for f in feature_skew_warnings(task, views, LeakThresholds(), "group")[0]]
        assert any(said in problem for problem in found), found
        assert feature_skew_warnings(task, views, LeakThresholds(), "time")[0] == []
        twin = runner.load(ok).make_task()
        assert feature_skew_warnings(twin, model_views(twin), LeakThresholds(), "group")[0] == []


def test_one_chance_close_pair_is_not_a_copy_but_two_are_and_one_exact_copy_is():
    """A dense 3-feature data set puts one val example close to a train example by chance: one inexact
    near pair is noted, not warned (near_dup_min_examples=2); declared down to 1 it is warned again."""
    _, result = _audit_module("ok_monotone_index_feature")
    assert result.verdict == "pass", result.reason
    _, result = _audit_module("ok_monotone_index_feature", LeakThresholds(near_dup_min_examples=1))
    assert result.verdict == "warn" and "within RMS" in result.reason
    module = importlib.import_module("tests.planted_tasks.ok_monotone_index_feature")
    task = module.make_task()
    copied = task.splits["train"][3]
    task.splits["val"].append(Example(10_000, "copy", dict(copied.fields)))  # one exact copy, its own group
    assert audit_split(task, "group").verdict != "pass"


def test_a_template_every_row_holds_is_left_out_of_the_text_overlap():
    """A long system prompt in every row made two different questions overlap 0.82 (a near-duplicate): the
    shingles in more than half the rows are the template's. Declared off (template_share=1), it is back."""
    _, result = _audit_module("ok_yesno_long_system_prompt")
    assert result.verdict == "pass", result.reason
    loose = LeakThresholds(template_share=1.0, near_dup_min_examples=1)
    _, result = _audit_module("ok_yesno_long_system_prompt", loose)
    assert result.verdict == "warn" and "nearly the same text" in result.reason


def test_short_templated_texts_are_compared_whole_not_by_shingles():
    """Voice commands of a few templates ("set timer 36", "set timer 3") share most of their 5-character
    shingles: near-duplicates by overlap, though each is its own command. Texts under near_dup_min_chars (30)
    are compared whole only (identical texts are still found); declared down to 1, the overlap is back."""
    _, result = _audit_module("ok_intents_short_commands")
    assert result.verdict == "pass", result.reason
    _, result = _audit_module("ok_intents_short_commands", LeakThresholds(near_dup_min_chars=1))
    assert result.verdict == "warn" and "nearly the same text" in result.reason


def test_targets_clipped_at_both_ends_warn_and_targets_scaled_or_piled_at_one_end_do_not():
    """An outside examination's planted task: standardised prices clipped to [0, 1] (half the targets exactly
    0) passed every check, and the split audit blamed validation's own statistics (min 0, max 1) instead.
    Prices min-max scaled, and rainfall with its dry days at exactly 0 mm, are correct."""
    module, result = _audit_module("bug_regression_target_clipped")
    assert result.verdict == "warn" and module.EXPECTED["said"] in result.reason, result.reason
    assert "exactly 0 and" in result.reason and "own split's statistics" not in result.reason, result.reason
    for name in ("ok_regression_target_min_max_scaled", "ok_regression_rainfall_zero_inflated"):
        module, result = _audit_module(name)
        assert module.EXPECTED is None and result.verdict == "pass", (name, result.reason)


def test_a_split_min_max_scaled_on_itself_is_found_beside_a_zero_inflated_feature():
    """A review: the clipped-target guard, applied to every feature, hid a validation split min-max scaled on
    itself whenever one of its features had many zeros (amounts, counts). Only targets piled at both ends are
    clipped ones."""
    import numpy as np

    from pilot.checks.leaks.own_statistics import _piled, _scaled

    rng = np.random.default_rng(0)
    x = np.c_[rng.normal(size=200), rng.exponential(size=200) * (rng.random(200) > 0.3)]
    x = (x - x.min(0)) / (x.max(0) - x.min(0))  # fit_transform on the split itself
    assert _scaled(x) == "min 0 and max 1"
    clipped = np.clip(rng.normal(size=200), 0.0, 1.0)
    assert _piled(clipped) and not _piled(x[:, 1]) and _scaled(clipped.reshape(-1, 1), clipped=True) is None


def test_values_that_fill_one_split_warn_and_their_correct_twins_do_not():
    """Unseen users mapped to a lookup's default index 0 (a real training user) fill validation's 'user'
    input; a title column missing from validation's export leaves every validation title empty. Hashed
    user buckets and a complete export are not warned."""
    from pilot.checks.leaks import model_views, one_split_value_warnings
    from tests.planted_tasks import runner

    for bug, ok, said in (
        ("bug_unseen_users_default_index", "ok_unseen_users_hashed_buckets", "val's input 'user' is 0 in"),
        ("bug_val_export_without_title", "ok_val_export_with_title", "raw field 'title' is empty in 100%"),
    ):
        task = runner.load(bug).make_task()
        found, report = one_split_value_warnings(task, model_views(task))
        assert any(said in f.problem for f in found), (found, report)
        assert (
            not one_split_value_warnings(task, model_views(task), "time")[0] or "title" in said
        )  # new values by design
        twin = runner.load(ok).make_task()
        assert one_split_value_warnings(twin, model_views(twin))[0] == []
    task = runner.load("bug_val_export_without_title").make_task()  # a title the model never reads: not judged
    task.encode = lambda e, encode=task.encode: encode(dataclasses.replace(e, fields={**e.fields, "title": "x"}))
    views = model_views(task)
    assert not views.skipped and one_split_value_warnings(task, views)[0] == []


def test_images_with_their_colour_channels_in_another_order_warn_naming_the_order():
    """Validation decoded BGR (cv2.imread) and training RGB, normalised alike: each class's per-channel
    pixel quantiles match training's with the channels reversed, not as stored. Decoded alike: nothing."""
    from pilot.checks.leaks import channel_order_warnings, model_views
    from tests.planted_tasks import runner

    found, report = channel_order_warnings(model_views(runner.load("bug_val_images_decoded_bgr").make_task()))
    assert found and "read as [2, 1, 0] (BGR" in found[0].problem, report
    assert report["val_distance"]["stored"] >= 1.8 * report["val_distance"]["best"]
    found, report = channel_order_warnings(model_views(runner.load("ok_val_images_decoded_rgb").make_task()))
    assert not found and report["val_distance"]["stored"] == report["val_distance"]["best"]


def test_partial_copies_of_training_examples_warn_and_distinct_rows_do_not():
    """A one-to-many merge repeats each sale with another staff count and floor area; split by merged row,
    the copies share every week measurement exactly across splits: warned. One row per store: not."""
    from pilot.checks.leaks import model_views, partial_copy_warnings
    from tests.planted_tasks import runner

    found, report = partial_copy_warnings(model_views(runner.load("bug_merge_fanout_rows_split").make_task()))
    assert found and "partial copies of training examples" in found[0].problem, report
    assert "100% of them with the same label" in found[0].problem
    found, report = partial_copy_warnings(model_views(runner.load("ok_merge_one_row_per_store").make_task()))
    assert not found and report["val_partial_copies"] == 0, report


def test_a_category_coded_per_split_warns_as_integer_codes_and_as_one_hot_columns():
    """pd.factorize per split (another code per plan in validation) and pd.get_dummies per split (validation
    without a withdrawn plan: its columns move by one) warn naming a moved value; coded once, nothing."""
    from pilot.checks.leaks import category_code_warnings, model_views
    from tests.planted_tasks import runner

    for bug, said in (("bug_category_codes_per_split", "is 2 in train"), ("bug_one_hot_per_split", "one-hot codes")):
        found, _ = category_code_warnings(model_views(runner.load(bug).make_task()))
        assert found and said in found[0].problem and "field 'plan' per split" in found[0].problem
    for ok in ("ok_category_codes_fitted_once", "ok_one_hot_fitted_once"):
        assert category_code_warnings(model_views(runner.load(ok).make_task()))[0] == []


def test_missing_values_filled_per_class_warn_and_a_fill_with_one_training_mean_does_not():
    """Incomes missing for 30% of applicants, filled with their own class's mean over every row: one exact value
    per class, its rows all of that class, warned naming both; filled with the training mean: nothing."""
    from pilot.checks.leaks import class_fill_warnings, model_views
    from tests.planted_tasks import runner

    task = runner.load("bug_missing_income_filled_per_class").make_task()
    found, report = class_fill_warnings(task, model_views(task))
    assert found and "one exact value per class" in found[0].problem, report
    assert "all 'default'" in found[0].problem and "all 'repaid'" in found[0].problem
    twin = runner.load("ok_missing_income_filled_with_train_mean").make_task()
    found, report = class_fill_warnings(twin, model_views(twin))
    assert found == [] and report["features_with_pure_values"] == 0


def test_a_training_only_flip_that_leaves_a_position_target_as_it_was_warns_and_one_that_flips_it_does_not():
    """A blob's x regressed from images flipped left-right in training only (inputs scaled: x * 2 - 0.5): the
    targets left as they were follow the raw image, not the flipped one the model sees; flipped too, nothing."""
    from pilot.checks.leaks import model_views, train_transform_warnings
    from tests.planted_tasks import runner

    found, report = train_transform_warnings(model_views(runner.load("bug_flip_keeps_position_target").make_task()))
    assert found and "leaves their regression targets as they were" in found[0].problem, report
    assert report["transforms_in_train"] == {"horizontal flip": 116}
    found, report = train_transform_warnings(model_views(runner.load("ok_flip_with_position_target").make_task()))
    assert not found and report["targets"]["distance_to_seen"] < 0.5 * report["targets"]["distance_to_stored"]


def test_a_target_encoding_counted_over_every_split_warns_and_one_fitted_on_train_does_not():
    """A merchant's smoothed fraud rate counted over every row before the split fits each merchant's mean label
    over every split exactly and training's alone far worse; counted on training: nothing. The merchant's name
    (two words: a text to the text checks) beside numbers the model reads is no duplicate text either."""
    from pilot.checks.leaks import duplicate_findings, label_encoding_warnings, model_views
    from pilot.checks.leaks.model_views import example_digest
    from pilot.checks.leaks.thresholds import LeakThresholds
    from tests.planted_tasks import runner

    task = runner.load("bug_target_encoding_over_every_split").make_task()
    found, report = label_encoding_warnings(model_views(task))
    assert found and "'merchant' value's mean of the label computed over every split" in found[0].problem, report
    twin = runner.load("ok_target_encoding_fitted_on_train").make_task()
    views = model_views(twin)
    assert label_encoding_warnings(views)[0] == []
    fails, _, report = duplicate_findings(twin, views, lambda e: example_digest(e.fields, None), LeakThresholds())
    assert fails == [], [f.problem for f in fails]


def test_a_rolling_window_that_holds_the_target_day_warns_and_one_of_the_days_before_does_not():
    """Lags 1-3 and a 7-day rolling mean including the day to forecast: exact with the 4 examples before it
    (their lags give the window's older days), though their inputs alone leave the target unexplained; the
    window shifted by one day: nothing, and neither for a noise-free sine whose past gives its next value."""
    from pilot.checks.leaks import model_views, window_target_warnings
    from tests.planted_tasks import runner

    found, report = window_target_warnings(
        model_views(runner.load("bug_rolling_mean_holds_the_target_day").make_task())
    )
    assert found and "the 4 example(s) before it" in found[0].problem, report
    assert report["val_with_4_earlier"]["unexplained"] <= 1e-6 <= report["val_with_4_earlier"]["earlier_alone"]
    for ok in ("ok_rolling_mean_of_the_days_before", "ok_sine_forecast"):
        assert window_target_warnings(model_views(runner.load(ok).make_task()))[0] == []


def test_a_text_copied_into_a_later_split_with_another_label_is_still_the_same_text():
    """The label is no input that tells two texts apart: a repost relabelled is still a copy."""
    from pilot.checks.leaks import duplicate_findings, model_views
    from pilot.checks.leaks.model_views import example_digest
    from pilot.checks.leaks.thresholds import LeakThresholds
    from tests.planted_tasks import runner

    task = runner.load("bug_reposted_reviews_beside_text_features").make_task()
    for example in task.splits["val"]:
        example.fields["label"] = "no" if example.fields["label"] == "yes" else "yes"
    fails, _, _ = duplicate_findings(
        task, model_views(task), lambda e: example_digest(e.fields, None), LeakThresholds()
    )
    assert any("with the same text as a train example" in f.problem for f in fails), [f.problem for f in fails]
