"""A finished run's run.json stamps metrics.jsonl (its size, its modification time to the nanosecond and
its summary as the recap reads it): the recap's tables take the summary from the stamp while the file is
unchanged, and read the file, checked line by line, once it is not (issue 17: the recap near the read
floor, bench/recap_10k.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_pilot

from pilot.metrics_reading import metrics_stamp, read_metrics, unchanged_summary
from pilot.recap import reading


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("stamp") / "run"
    done = run_pilot(run, "mode=train", "budget.value=20", "run.threads=1")
    assert done.returncode == 0, done.stderr[-2000:]
    return run


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    """A copy of the finished run (its files' times kept, as a copy with -p keeps them)."""
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, copy_function=shutil.copy2)
    return copy


def _record(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def test_a_finished_run_stamps_the_summary_the_recap_reads_from_its_metrics(finished_run):
    stamp = _record(finished_run)["metrics_file"]
    path = finished_run / "metrics.jsonl"
    assert (stamp["bytes"], stamp["mtime_ns"]) == (path.stat().st_size, path.stat().st_mtime_ns)
    read = read_metrics(path)
    assert stamp["summary"] == {**{k: v for k, v in read.items() if k != "_val_curve"}, "last_val_update": 20}
    assert stamp["summary"]["updates_done"] == 20 and stamp["summary"]["val_points"] == 1


def test_the_tables_take_an_unchanged_files_summary_from_the_stamp(run, monkeypatch):
    expected = reading.read_run(run)
    monkeypatch.setattr(reading, "read_metrics", lambda *a, **k: pytest.fail("metrics.jsonl read again"))
    row = reading.read_run(run)
    assert row == expected and row["final_val_loss"] == _record(run)["metrics_file"]["summary"]["final_val_loss"]


def test_the_picture_reads_the_same_curves_with_the_stamp_as_without(run):
    curves = reading.read_runs([str(run)], picture=True)[1][str(run)]
    record = _record(run)
    record.pop("metrics_file")
    (run / "run.json").write_text(json.dumps(record))
    plain = reading.read_runs([str(run)], picture=True)[1][str(run)]
    assert np.array_equal(curves[0], plain[0]) and curves[1] == plain[1] and len(curves[0]) == 20


@pytest.mark.parametrize("change", ["cut", "same_size", "appended"])
def test_a_file_changed_after_the_run_is_read_and_checked_not_the_stamp(run, change):
    path = run / "metrics.jsonl"
    text = path.read_text()
    if change == "cut":  # the final validation line lost: the run's result is not there
        path.write_text(text[: text.rstrip("\n").rfind("\n") + 1])
    elif change == "same_size":  # a loss edited in place, the file's length kept
        val = text.rstrip("\n").rsplit("\n", 1)[1]
        edited = val[: val.index('"loss": ') + 8] + "9" + val[val.index('"loss": ') + 9 :]
        path.write_text(text.replace(val, edited))
        assert path.stat().st_size == len(text)
    else:  # a later update appended by hand
        path.write_text(text + text.rstrip("\n").rsplit("\n", 1)[1].replace('"update": 20', '"update": 21') + "\n")
    stamp = _record(run)["metrics_file"]
    assert unchanged_summary(stamp, path) is None
    row = reading.read_run(run)
    if change == "cut":
        assert row["status"] == "unreadable" and "final validation" in row["stop_cause"], row
    elif change == "same_size":
        assert row["final_val_loss"] != stamp["summary"]["final_val_loss"] and str(row["final_val_loss"]).startswith(
            "9"
        )
    else:
        assert row["val_points"] == 2


def test_a_stamp_of_another_shape_is_not_read(run):
    path = run / "metrics.jsonl"
    stamp = _record(run)["metrics_file"]
    for damaged in (
        {**stamp, "summary": {**stamp["summary"], "final_val_loss": "low"}},
        {**stamp, "summary": {k: v for k, v in stamp["summary"].items() if k != "val_points"}},
        {**stamp, "bytes": "5381"},
        "stamped",
    ):
        assert unchanged_summary(damaged, path) is None
    assert unchanged_summary(stamp, path) == stamp["summary"]


def test_a_continued_run_drops_its_stamp_until_it_ends_again(run):
    from pilot.run_record import RunRecord

    record = RunRecord(run, _record(run))  # as pilot.resume continues a run's record
    assert "metrics_file" not in _record(run)
    record.log_metrics({"kind": "train", "update": 21, "loss": 1.0})
    record.finish("ok", "budget_reached")
    stamp = _record(run)["metrics_file"]
    assert stamp == metrics_stamp(run / "metrics.jsonl") and stamp["summary"]["updates_done"] == 21
    os.utime(run / "metrics.jsonl", ns=(stamp["mtime_ns"], stamp["mtime_ns"] + 1))  # touched: read again
    assert unchanged_summary(stamp, run / "metrics.jsonl") is None


def test_a_metrics_file_over_the_stamps_limit_is_not_read_at_the_runs_end(run, monkeypatch):
    import pilot.metrics_reading as metrics_reading

    path = run / "metrics.jsonl"
    monkeypatch.setattr(metrics_reading, "STAMP_MOST_BYTES", path.stat().st_size - 1)
    monkeypatch.setattr(metrics_reading, "read_metrics", lambda *a, **k: pytest.fail("read whole at the run's end"))
    assert metrics_stamp(path) is None
