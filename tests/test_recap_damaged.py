"""The recap over damaged run directories (every one a row, never a crash) and over several sweeps
(judged apart unless pooled; a seed run twice counts once)."""

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

import pilot.recap.picture as picture_module
from pilot.errors import PilotError
from pilot.recap import RecapCallback, RecapRefused, build_recap, collect, main, summarise

REPO = Path(__file__).resolve().parents[1]
MISSING = object()  # the file is not there at all
CONTROL = "optim.lr=1e-4"


def record(**changes):
    """A run.json as pilot writes it for a finished run; ``changes`` set (or, with MISSING, drop) keys."""
    data = {
        "run_id": "20261130-010000-aaaaaaaaaaaa",
        "parent_id": None,
        "variant": "optim.lr=0.0001",
        "seed": 0,
        "status": "ok",
        "stop_cause": "budget_reached",
        "mode": "train",
        "overrides": ["optim.lr=1e-4", "seed=0"],
        "started_at": "2026-11-30T01:00:00+0000",
        "finished_at": "2026-11-30T01:00:30+0000",
        "peak_memory": {"rss_peak_bytes": 400_000_000},
        "seconds_per_update": 0.04,
        "task": {"data": {"name": "digits"}, "targets_truncated_share": 0.0},
        "closing": {"verdict": "pass"},
        "resumes": [],
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not MISSING}


def metrics_line(kind, update, loss, **extra):
    """One metrics.jsonl line as pilot writes it: kind, update, loss first."""
    row = {"kind": kind, "update": update, "loss": loss}
    if kind == "train":
        row.update(
            lr=1e-4,
            grad_norm=1.0,
            examples=16,
            targets=16,
            examples_seen=16 * update,
            targets_seen=16 * update,
            loss_scale=None,
            step_skipped=False,
            seconds=0.01,
        )
    else:
        row.update(accuracy=0.5, targets=64.0, examples=64)
    row.update(extra)
    return json.dumps(row)


def metrics(final_val=1.5, updates=6):
    """Train lines 1..updates, validation after update 3 and after the last (its loss ``final_val``)."""
    lines = []
    for update in range(1, updates + 1):
        lines.append(metrics_line("train", update, 3.0 - 0.1 * update))
        if update == 3:
            lines.append(metrics_line("val", update, final_val + 0.5))
    lines.append(metrics_line("val", updates, final_val))
    return "\n".join(lines) + "\n"


def make_run(directory: Path, run_json=None, metrics_text=None) -> Path:
    """A run directory: run.json from a dict (dumped), raw text or bytes, metrics.jsonl as text; MISSING leaves
    one out."""
    directory.mkdir(parents=True, exist_ok=True)
    run_json = record() if run_json is None else run_json
    metrics_text = metrics() if metrics_text is None else metrics_text
    if isinstance(run_json, bytes):
        (directory / "run.json").write_bytes(run_json)
    elif run_json is not MISSING:
        (directory / "run.json").write_text(run_json if isinstance(run_json, str) else json.dumps(run_json))
    if metrics_text is not MISSING:
        (directory / "metrics.jsonl").write_text(metrics_text)
    return directory


def replace_line(text: str, number: int, line: str) -> str:
    lines = text.split("\n")
    lines[number - 1] = line
    return "\n".join(lines)


# (id, run.json, metrics.jsonl, what the reason must say); None: the default, a good one
DAMAGED = [
    ("no run.json", MISSING, None, "run.json: missing"),
    ("empty run.json", "", None, "run.json: empty file"),
    ("truncated run.json", json.dumps(record())[:60], None, "run.json line 1: not JSON"),
    ("run.json a list", "[1, 2]", None, "run.json: holds a list, not an object"),
    ("run.json null", "null", None, "run.json: holds null, not an object"),
    ("run.json a string", '"ok"', None, "run.json: holds a string, not an object"),
    ("run.json a number", "3", None, "run.json: holds a number, not an object"),
    ("no variant", record(variant=MISSING), None, "run.json: no variant"),
    ("no seed", record(seed=MISSING), None, "run.json: no seed"),
    ("no status", record(status=MISSING), None, "run.json: no status"),
    ("null status", record(status=None), None, "run.json: status is null, not one of running, ok"),
    ("variant a number", record(variant=5), None, "run.json: variant is 5, not a string"),
    ("seed a string", record(seed="0"), None, "run.json: seed is '0', not an integer"),
    ("seed true", record(seed=True), None, "run.json: seed is true, not an integer"),
    ("seed a float", record(seed=0.5), None, "run.json: seed is 0.5, not an integer"),
    ("unknown status", record(status="great"), None, "run.json: status is 'great', not one of running, ok, diverged"),
    ("started_at garbage", record(started_at="yesterday"), None, "run.json: started_at is 'yesterday', not a time"),
    ("finished_at a number", record(finished_at=5), None, "run.json: finished_at is 5, not a time"),
    (
        "time zone on one time only",
        record(finished_at="2026-11-30T01:00:30"),
        None,
        "one has a time zone, the other not",
    ),
    ("peak_memory a string", record(peak_memory="lots"), None, "run.json: peak_memory is 'lots', not an object"),
    (
        "peak rss a string",
        record(peak_memory={"rss_peak_bytes": "big"}),
        None,
        "run.json: peak_memory.rss_peak_bytes is 'big', not a finite number >= 0",
    ),
    (
        "seconds_per_update a string",
        record(seconds_per_update="fast"),
        None,
        "run.json: seconds_per_update is 'fast', not a finite number >= 0",
    ),
    (
        "memory estimate a string",
        record(memory_estimate={"peak_bytes": "1 GB"}),
        None,
        "memory_estimate.peak_bytes is '1 GB', not a finite number >= 0",
    ),
    ("task a list", record(task=[1]), None, "run.json: task is [1], not an object"),
    # values no run writes (an outside examination: a negative wall time shown as an ok row, a mean
    # time per update below zero, a closing verdict 'excellent', a resume that is a string)
    ("updates_done a string", record(updates_done="999"), None, "run.json: updates_done is '999', not an integer >= 0"),
    ("updates_done below 0", record(updates_done=-5), None, "run.json: updates_done is -5, not an integer >= 0"),
    ("updates_done true", record(updates_done=True), None, "run.json: updates_done is true, not an integer >= 0"),
    (
        "seconds_per_update below 0",
        record(seconds_per_update=-1.0),
        None,
        "seconds_per_update is -1.0, not a finite number >= 0",
    ),
    (
        "finished before it started",
        record(finished_at="2026-11-30T00:59:00+0000"),
        None,
        "finished_at '2026-11-30T00:59:00+0000' is before started_at",
    ),
    (
        "closing verdict unknown",
        record(closing={"verdict": "excellent"}),
        None,
        "closing.verdict is 'excellent', not one of",
    ),
    ("resumes of strings", record(resumes=["x"]), None, 'resumes is ["x"], not a list of objects'),
    ("seconds_per_update infinite", record(seconds_per_update=math.inf), None, "not a finite number >= 0"),
    ("peak rss NaN", record(peak_memory={"rss_peak_bytes": math.nan}), None, "not a finite number >= 0"),
    ("a share below 0", record(task={"targets_truncated_share": -3}), None, "is -3, not a number from 0 to 1"),
    ("finished in the year 9999", record(finished_at="9999-12-31T00:00:00+0000"), None, "is in the future"),
    (
        "truncated share a string",
        record(task={"targets_truncated_share": "half"}),
        None,
        "task.targets_truncated_share is 'half', not a number",
    ),
    ("closing a string", record(closing="pass"), None, "run.json: closing is 'pass', not an object"),
    (
        "overrides a string",
        record(overrides="optim.lr=1e-4"),
        None,
        "overrides is 'optim.lr=1e-4', not a list of strings",
    ),
    ("overrides of numbers", record(overrides=[1, 2]), None, "overrides is [1, 2], not a list of strings"),
    ("resumes a number", record(resumes=3), None, "run.json: resumes is 3, not a list"),
    ("sweep_id a number", record(sweep_id=7), None, "run.json: sweep_id is 7, not a string"),
    ("run.json not UTF-8", b"\xff\xfe{", None, "run.json: not text (byte 0 is not UTF-8)"),
    ("no metrics.jsonl", None, MISSING, "metrics.jsonl: missing"),
    ("metrics line a list", None, replace_line(metrics(), 2, "[1, 2]"), "metrics.jsonl line 2: a list, not an object"),
    ("metrics line null", None, replace_line(metrics(), 2, "null"), "metrics.jsonl line 2: null, not an object"),
    ("metrics line not JSON", None, replace_line(metrics(), 2, "loss went up"), "metrics.jsonl line 2: not JSON"),
    (
        "metrics update a string",
        None,
        replace_line(metrics(), 2, metrics_line("train", "abc", 1.0)),
        "metrics.jsonl line 2: update is 'abc', not an integer >= 0",
    ),
    (
        "metrics update negative",
        None,
        replace_line(metrics(), 2, metrics_line("train", -2, 1.0)),
        "metrics.jsonl line 2: update is -2, not an integer >= 0",
    ),
    (
        "metrics update a float",
        None,
        replace_line(metrics(), 2, metrics_line("train", 2.5, 1.0)),
        "metrics.jsonl line 2: update is 2.5, not an integer >= 0",
    ),
    (
        "metrics loss a string",
        None,
        replace_line(metrics(), 7, metrics_line("train", 6, "abc")),
        "metrics.jsonl line 7: loss is 'abc', not a number",
    ),
    (
        "metrics val loss a string",
        None,
        replace_line(metrics(), 4, metrics_line("val", 3, "abc")),
        "metrics.jsonl line 4: loss is 'abc', not a number",
    ),
    (
        "metrics train loss null",
        None,
        replace_line(metrics(), 1, metrics_line("train", 1, None)),
        "metrics.jsonl line 1: loss is null, not a number",
    ),
    (
        "metrics no loss",
        None,
        replace_line(metrics(), 1, '{"kind": "train", "update": 1}'),
        "metrics.jsonl line 1: no loss",
    ),
    (
        "metrics unknown kind",
        None,
        replace_line(metrics(), 1, metrics_line("test", 1, 1.0)),
        "metrics.jsonl line 1: kind is 'test', not 'train' or 'val'",
    ),
    (
        "metrics no kind",
        None,
        replace_line(metrics(), 1, '{"update": 1, "loss": 2.0}'),
        "metrics.jsonl line 1: no kind",
    ),
    (
        "metrics two records on one line",
        None,
        replace_line(metrics(), 2, metrics_line("train", 2, 1.0) + metrics_line("train", 3, 1.0)),
        "metrics.jsonl line 2: not JSON",
    ),
    (
        "metrics examples_seen a string",
        None,
        replace_line(metrics(), 7, metrics_line("train", 6, 1.0, examples_seen="many")),
        "metrics.jsonl line 7: examples_seen is 'many', not an integer >= 0",
    ),
    (
        "metrics accuracy a string",
        None,
        replace_line(metrics(), 8, metrics_line("val", 6, 1.0, accuracy="high")),
        "metrics.jsonl line 8: accuracy is 'high', not a number",
    ),
    (
        "metrics several bad lines",
        None,
        replace_line(replace_line(metrics(), 2, "x"), 5, "y"),
        "metrics.jsonl line 2: not JSON (Expecting value at column 1) (and 1 more damaged line(s))",
    ),
]


@pytest.mark.parametrize("run_json, metrics_text, reason", [d[1:] for d in DAMAGED], ids=[d[0] for d in DAMAGED])
def test_each_damage_is_one_unreadable_row_naming_the_file_and_line(tmp_path, run_json, metrics_text, reason):
    make_run(tmp_path / "sweep" / "0-abc", run_json, metrics_text)
    frame = collect([tmp_path / "sweep"])
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["status"] == "unreadable"
    assert reason in row["stop_cause"], row["stop_cause"]


def test_damaged_metrics_keep_the_runs_identity_and_what_run_json_said(tmp_path):
    make_run(
        tmp_path / "run", record(sweep_id="s1", seed=3), replace_line(metrics(), 7, metrics_line("train", 6, "abc"))
    )
    row = collect([tmp_path]).iloc[0]
    assert (row["status"], row["variant"], row["seed"], row["sweep_id"]) == ("unreadable", "optim.lr=0.0001", 3, "s1")
    assert row["stop_cause"] == "metrics.jsonl line 7: loss is 'abc', not a number (run.json says ok)"


def test_every_wrong_key_of_run_json_is_named_at_once(tmp_path):
    make_run(tmp_path / "run", record(seed="0", peak_memory="lots", started_at="yesterday"))
    cause = collect([tmp_path]).iloc[0]["stop_cause"]
    assert "seed is '0'" in cause and "peak_memory is 'lots'" in cause and "started_at is 'yesterday'" in cause


def test_run_json_that_is_a_directory_is_unreadable(tmp_path):
    (tmp_path / "run" / "run.json").mkdir(parents=True)
    (tmp_path / "run" / "metrics.jsonl").write_text(metrics())
    row = collect([tmp_path]).iloc[0]
    assert row["status"] == "unreadable" and row["stop_cause"].startswith("run.json: cannot be read")


def test_metrics_that_are_not_text_are_unreadable(tmp_path):
    run = make_run(tmp_path / "run")
    (run / "metrics.jsonl").write_bytes(b"\x00\xff\xfe garbage after a crash")
    row = collect([tmp_path]).iloc[0]
    assert row["status"] == "unreadable" and row["stop_cause"].startswith("metrics.jsonl: not text")


HARMLESS = [
    ("unknown keys in run.json", record(colour="blue", peak_memory={"rss_peak_bytes": 1, "new": "x"}), None, "ok"),
    ("unknown keys in metrics", None, replace_line(metrics(), 2, metrics_line("train", 2, 2.8, colour="blue")), "ok"),
    (
        "keys in another order",
        None,
        replace_line(metrics(), 2, json.dumps({"loss": 2.8, "update": 2, "kind": "train"})),
        "ok",
    ),
    ("blank lines", None, metrics().replace("\n", "\n\n", 2), "ok"),
    ("no final newline", None, metrics().rstrip("\n"), "ok"),
    # a last line cut short (a kill or a full disk mid-write, a line still being written) is skipped, as a
    # resume skips it: the run is judged by its record (it said "unreadable" and hid a disk_full stop)
    ("last line cut by a kill", record(status="failed", stop_cause="disk_full"), metrics()[:-30], "failed"),
    ("a line being written", record(status="running", finished_at=MISSING), metrics()[:-30], "running"),
    ("sweep_id null", record(sweep_id=None), None, "ok"),
    (
        "nulls where values are optional",
        record(peak_memory=None, seconds_per_update=None, task=None, closing=None, started_at=None, overrides=None),
        None,
        "ok",
    ),
    ("a validation that scored nothing", None, replace_line(metrics(), 4, metrics_line("val", 3, None)), "ok"),
    ("a running run with no metrics yet", record(status="running", finished_at=MISSING), "", "running"),
    (
        "another time format",
        record(started_at="2026-11-30T01:00:00+00:00", finished_at="2026-11-30 02:00:30+01:00"),  # 30 s later
        None,
        "ok",
    ),
]


@pytest.mark.parametrize("run_json, metrics_text, status", [h[1:] for h in HARMLESS], ids=[h[0] for h in HARMLESS])
def test_harmless_oddities_stay_readable(tmp_path, run_json, metrics_text, status):
    make_run(tmp_path / "run", run_json, metrics_text)
    frame = collect([tmp_path])
    assert len(frame) == 1 and frame.iloc[0]["status"] == status, frame.iloc[0]["stop_cause"]


def test_a_diverged_run_logging_nan_and_inf_is_a_real_value_not_damage(tmp_path):
    lines = [
        metrics_line("train", 1, 2.0),
        metrics_line("train", 2, float("inf")),
        metrics_line("train", 3, float("nan")),
        metrics_line("val", 3, float("nan")),
    ]
    make_run(tmp_path / "run", record(status="diverged", stop_cause="non_finite_loss"), "\n".join(lines) + "\n")
    row = collect([tmp_path]).iloc[0]
    assert row["status"] == "diverged" and row["updates_done"] == 3
    assert math.isnan(row["final_train_loss"]) and math.isnan(row["final_val_loss"])


def test_the_fast_and_the_line_by_line_reading_agree(tmp_path):
    """A file pilot wrote is read by one regex; the same file with a blank line goes through json.
    The picture's training points agree too: the fast path reads their losses with numpy to 16
    decimals (pilot.metrics_reading.training_points), json exactly."""
    text = metrics(final_val=1.25)
    make_run(tmp_path / "fast", record(run_id="a"), text)
    make_run(tmp_path / "slow", record(run_id="b"), text.replace("\n", "\n\n", 1))
    curves = {}
    frame = collect([tmp_path], curves).set_index("run_id")
    columns = [
        "updates_done",
        "examples_seen",
        "targets_seen",
        "final_train_loss",
        "final_val_loss",
        "best_val_loss",
        "final_val_accuracy",
        "val_points",
    ]
    assert frame.loc["a", columns].tolist() == frame.loc["b", columns].tolist()
    assert frame.loc["a", "final_val_loss"] == 1.25 and frame.loc["a", "updates_done"] == 6
    (fast, fast_val), (slow, slow_val) = (curves[str(tmp_path / name)] for name in ("fast", "slow"))
    assert fast_val == slow_val and len(fast_val) == 2  # validation points: exact, both ways
    assert fast.shape == slow.shape == (6, 2) and (fast[:, 0] == slow[:, 0]).all()  # every training point
    np.testing.assert_allclose(fast[:, 1], slow[:, 1], rtol=1e-12)
    np.testing.assert_allclose(slow, [(u, 3.0 - 0.1 * u) for u in range(1, 7)], rtol=0)


def test_the_picture_reads_every_training_point_either_way(tmp_path):
    """A long run is read whole, its spike included (the picture decimates it to the pixels it
    occupies, never to a fixed number of evenly spaced points), by the fast and the line-by-line reading."""
    lines = [json.dumps({"kind": "train", "update": u, "loss": 50.0 if u == 333 else 10.0 / u}) for u in range(1, 1001)]
    text = "\n".join(lines) + "\n"
    make_run(tmp_path / "fast", record(run_id="a"), text)
    make_run(tmp_path / "slow", record(run_id="b"), text.replace("\n", "\n\n", 1))
    curves = {}
    collect([tmp_path], curves)
    fast, slow = (curves[str(tmp_path / name)][0] for name in ("fast", "slow"))
    assert fast.shape == slow.shape == (1000, 2) and (fast[:, 0] == np.arange(1, 1001)).all()
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    assert fast[332, 1] == 50.0 and fast[-1, 1] == 0.01 and fast[0, 1] == 10.0


def test_a_sweep_of_good_and_damaged_runs_builds_every_file_with_the_good_rows_right(tmp_path):
    sweep, good_only = tmp_path / "sweep", tmp_path / "good_only"
    losses = {
        ("optim.lr=0.0001", 0): 1.00,
        ("optim.lr=0.0001", 1): 1.02,
        ("optim.lr=0.0002", 0): 0.80,
        ("optim.lr=0.0002", 1): 0.81,
    }
    for root in (sweep, good_only):
        for number, ((variant, seed), loss) in enumerate(losses.items()):
            make_run(
                root / f"{number}-good",
                record(variant=variant, seed=seed, run_id=f"good-{number}", overrides=[variant, f"seed={seed}"]),
                metrics(final_val=loss),
            )
    for number, (_, run_json, metrics_text, _) in enumerate(DAMAGED):
        make_run(sweep / f"{number + 10}-damaged", run_json, metrics_text)
    frame = build_recap([sweep], sweep, control=CONTROL)
    assert len(frame) == len(losses) + len(DAMAGED)
    assert (frame["status"] == "unreadable").sum() == len(DAMAGED)
    good = frame[frame["status"] == "ok"]
    assert {(v, s): loss for v, s, loss in zip(good["variant"], good["seed"], good["final_val_loss"])} == losses
    assert all((sweep / name).stat().st_size > 0 for name in ("recap.csv", "recap.md", "recap.png"))
    assert len(pd.read_csv(sweep / "recap.csv")) == len(frame)
    reference = build_recap([good_only], good_only, control=CONTROL, plot=False)
    assert frame.attrs["conclusions"] == reference.attrs["conclusions"]
    assert "lower validation loss than the control" in frame.attrs["conclusions"][0]
    text = (sweep / "recap.md").read_text()
    assert "unreadable" in text and "metrics.jsonl line 7: loss is 'abc', not a number" in text


def test_a_recap_of_only_unreadable_runs_still_writes_its_files(tmp_path):
    make_run(tmp_path / "run", "[1, 2]")
    frame = build_recap([tmp_path / "run"], tmp_path / "run", control=CONTROL)
    assert frame["status"].tolist() == ["unreadable"]
    assert frame.attrs["conclusions"] == ["No readable run: nothing to compare."]
    assert (tmp_path / "run" / "recap.md").exists() and (tmp_path / "run" / "recap.csv").exists()


def test_a_damaged_phases_csv_is_named_not_a_crash(tmp_path):
    run = make_run(tmp_path / "run")
    (run / "phases.csv").write_text("phase,duration_s\nbuild_model,1.0\n")
    build_recap([tmp_path], tmp_path, control=CONTROL, plot=False)
    assert (
        f"{run / 'phases.csv'}: unreadable (no column verdict, detail, rss_peak_bytes)."
        in (tmp_path / "recap.md").read_text()
    )
    whole = "phase,rank,duration_s,verdict,detail,rss_peak_bytes\nbuild_model,0,1.0,pass,built,100\n"
    (run / "phases.csv").write_text(whole + "first_step,0,0.5,pa")  # cut after pilot wrote it whole
    build_recap([tmp_path], tmp_path, control=CONTROL, plot=False)
    said = (tmp_path / "recap.md").read_text()  # it showed the cut row as a phase, the lost ones never said
    assert f"{run / 'phases.csv'}: unreadable (its last line is cut" in said, said


def test_phase_tables_and_task_changes_are_still_reported(tmp_path):
    control = make_run(tmp_path / "control", record(run_id="c"))
    (control / "phases.csv").write_text(
        "phase,duration_s,verdict,detail,rss_peak_bytes\nsteady_steps,1.5,pass,4 updates,1000\n"
    )
    make_run(
        tmp_path / "short",
        record(
            run_id="s",
            variant="data.max_len=64",
            task={"data": {"name": "digits", "max_len": 64}, "targets_truncated_share": 0.1},
        ),
    )
    build_recap([tmp_path], tmp_path, control=CONTROL, plot=False, quality_tolerance=0.02)
    text = (tmp_path / "recap.md").read_text()
    assert "## Phase tables per variant" in text and "| steady_steps | 1.5 | 1000 | pass | 4 updates |" in text
    assert "Changes the task (not a memory saving of the same experiment): data.max_len=64" in text
    assert "not comparable: changes the task" in text


def test_a_run_the_recap_could_not_read_is_no_source_of_its_variants_phase_table(tmp_path):
    """Every run of a variant damaged: recap.md still printed a phase table 'From <that run>/phases.csv'."""
    damaged = make_run(tmp_path / "damaged", record(updates_done=500))  # metrics.jsonl falls short of it
    (damaged / "phases.csv").write_text("phase,duration_s,verdict,detail\nsteady_steps,9.9,pass,4 updates\n")
    frame = build_recap([tmp_path], tmp_path / "out", plot=False)
    assert frame["status"].tolist() == ["unreadable"]
    assert "phases.csv" not in (tmp_path / "out" / "recap.md").read_text()


# --------------------------------------------------------------------------- the command line
def test_cli_over_a_single_damaged_run_directory(tmp_path):
    """Its recap is written (naming why), and exits 1: a recap that could read no run compares nothing, and a
    script gated on it must not go on as if it had (it exited 0)."""
    run = make_run(tmp_path / "run", record(variant=MISSING))
    done = subprocess.run(
        [sys.executable, "-m", "pilot.recap", str(run)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr
    assert "none of the 1 run(s) could be read" in done.stderr and "Traceback" not in done.stderr
    recap = pd.read_csv(run / "recap.csv")
    assert recap["status"].tolist() == ["unreadable"] and "no variant" in recap["stop_cause"].iloc[0]
    # named on the console and in recap.md's table by its directory (nothing said, no name there, before)
    assert f"recap: {run}: unreadable (" in done.stderr and "no variant" in done.stderr
    assert f" ({run}) |" in (run / "recap.md").read_text()


def test_cli_over_one_readable_run_beside_a_damaged_one_exits_zero(tmp_path, capsys):
    make_run(tmp_path / "good")
    make_run(tmp_path / "damaged", record(variant=MISSING))
    main([str(tmp_path), "--no-plot"])  # no SystemExit: one run was read and compared
    assert "damaged: unreadable" in capsys.readouterr().err


def test_cli_refuses_a_path_that_does_not_exist_and_creates_nothing(tmp_path):
    good = make_run(tmp_path / "good")
    missing = tmp_path / "typo" / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "pilot.recap", str(missing), str(good)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert f"{missing} does not exist" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "typo").exists() and not (good / "recap.csv").exists()


def test_main_refuses_a_file_and_a_missing_path_at_once(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "notes.txt"), str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "notes.txt is not a directory" in error and "nowhere does not exist" in error
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "out").exists()


def test_an_output_that_cannot_be_written_is_a_message_not_a_traceback(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    (tmp_path / "out").write_text("a file where the recap's parent directory should go")
    with pytest.raises(SystemExit) as exit_:
        main([str(run), "--out", str(tmp_path / "out" / "recap"), "--no-plot"])
    said = capsys.readouterr().err
    assert exit_.value.code == 2 and f"cannot write the recap into {tmp_path / 'out' / 'recap'}" in said


def test_a_recap_that_cannot_be_finished_leaves_the_earlier_one_whole(tmp_path, monkeypatch):
    run, out = make_run(tmp_path / "run"), tmp_path / "out"
    build_recap([run], out)
    before = {name: (out / name).read_bytes() for name in ("recap.csv", "recap.md", "recap.png")}
    make_run(tmp_path / "run2")

    def disk_full(frame, curves, path, by):  # the picture half written when the disk fills up
        Path(path).write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(picture_module, "plot_curves", disk_full)  # in the drawing process, then here
    with pytest.raises(RecapRefused, match="No space left on device; the earlier recap there is left as it was"):
        build_recap([tmp_path], out)
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["recap.csv", "recap.md", "recap.png"]  # no temporary files


def test_build_recap_refuses_a_missing_path_with_a_pilot_error(tmp_path):
    with pytest.raises(RecapRefused) as refused:
        build_recap([tmp_path / "nowhere"], tmp_path / "nowhere")
    assert isinstance(refused.value, PilotError) and refused.value.exit_code == 2
    assert not (tmp_path / "nowhere").exists()


# --------------------------------------------------------------------------- sweeps and seeds
def two_identical_sweeps(directory: Path, with_ids: bool = True) -> None:
    """Two launches of the same sweep into one directory: control and variant, seed 0 each, same losses."""
    for launch in ("A", "B"):
        for variant, loss in (("optim.lr=0.0001", 1.0), ("optim.lr=0.0002", 0.5)):
            sweep_id = f"sweep-{launch}" if with_ids else None
            make_run(
                directory / (launch if not with_ids else ".") / f"{launch}-{variant}",
                record(
                    variant=variant,
                    sweep_id=sweep_id,
                    run_id=f"{launch}-{variant}",
                    started_at=f"2026-11-30T0{1 if launch == 'A' else 2}:00:00+0000",
                    finished_at=f"2026-11-30T0{1 if launch == 'A' else 2}:00:30+0000",
                ),
                metrics(final_val=loss),
            )


def test_two_sweeps_into_one_directory_are_judged_apart(tmp_path):
    two_identical_sweeps(tmp_path)
    frame = build_recap([tmp_path], tmp_path, control=CONTROL, plot=False)
    conclusions = frame.attrs["conclusions"]
    assert len(conclusions) == 2
    assert conclusions[0].startswith("Sweep sweep-A: Fewer than two finished seeds")
    assert conclusions[1].startswith("Sweep sweep-B: Fewer than two finished seeds")
    text = (tmp_path / "recap.md").read_text()
    assert "## Sweep sweep-A" in text and "## Sweep sweep-B" in text and "± 0" not in text
    assert set(pd.read_csv(tmp_path / "recap.csv")["sweep"]) == {"sweep-A", "sweep-B"}


def test_pooled_sweeps_count_a_repeated_seed_once(tmp_path):
    two_identical_sweeps(tmp_path)
    frame = build_recap([tmp_path], tmp_path, control=CONTROL, plot=False, pool=True)
    (conclusion, repeats) = frame.attrs["conclusions"]
    assert "spread is unknown" in conclusion and "± 0" not in conclusion  # two runs of seed 0 are one seed
    assert repeats.startswith("Repeated seeds count once") and "optim.lr=0.0001 (1 repeat(s))" in repeats
    assert len(frame) == 4  # every run keeps its row
    assert "Pooled: the runs of 2 sweeps judged as one" in (tmp_path / "recap.md").read_text()


def test_runs_without_a_sweep_id_belong_to_their_parent_directory(tmp_path):
    two_identical_sweeps(tmp_path, with_ids=False)
    frame = build_recap([tmp_path], tmp_path, control=CONTROL, plot=False)
    assert sorted(frame["sweep"].unique()) == [str(tmp_path / "A"), str(tmp_path / "B")]
    assert len(frame.attrs["conclusions"]) == 2
    pooled = build_recap([tmp_path], tmp_path, control=CONTROL, plot=False, pool=True)
    assert len(pooled.attrs["conclusions"]) == 2 and "Repeated seeds" in pooled.attrs["conclusions"][1]


def test_a_repeated_seed_uses_its_newest_finished_run(tmp_path):
    rows = []
    for variant, values in (("optim.lr=0.0001", {0: [1.0, 1.1], 1: [1.2]}), ("optim.lr=0.0002", {0: [0.5], 1: [0.6]})):
        for seed, losses in values.items():
            for attempt, loss in enumerate(losses):
                rows.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "status": "ok",
                        "final_val_loss": loss,
                        "run_id": f"{variant}-{seed}-{attempt}",
                        "started_at": f"2026-11-30T0{attempt + 1}:00:00+0000",
                    }
                )
    rows.append(
        {
            **rows[0],
            "status": "failed",
            "final_val_loss": None,
            "run_id": "newest-but-failed",
            "started_at": "2026-11-30T09:00:00+0000",
        }
    )
    summary, _ = summarise(pd.DataFrame(rows), CONTROL)
    control = summary[summary["is_control"]].iloc[0]
    assert (control["runs"], control["ok"], control["seeds"], control["repeats"]) == (4, 3, 2, 1)
    assert control["mean"] == pytest.approx((1.1 + 1.2) / 2)
    assert control["std"] == pytest.approx(pd.Series([1.1, 1.2]).std())
    assert control["per_seed"] == "seed 0: 1.1 (newest of 2 runs), seed 1: 1.2"


# --------------------------------------------------------------------------- the Hydra callback
def callback_config(sweep_dir: Path, journal: Path) -> OmegaConf:
    return OmegaConf.create(
        {
            "hydra": {"sweep": {"dir": str(sweep_dir)}},
            "campaign": {"control": CONTROL, "quality_tolerance": None, "journal": str(journal)},
        }
    )


@pytest.mark.parametrize("with_ids", [True, False], ids=["sweep ids", "no sweep ids"])
def test_the_callback_recaps_only_the_multirun_that_just_ended(tmp_path, with_ids):
    sweep_dir, journal = tmp_path / "sweeps" / "fixed", tmp_path / "journal.md"
    config = callback_config(sweep_dir, journal)
    for seed in (0, 1):  # an earlier launch into the same directory
        make_run(
            sweep_dir / f"{seed}-old", record(seed=seed, sweep_id="old" if with_ids else None, run_id=f"old-{seed}")
        )
    callback = RecapCallback()
    callback.on_multirun_start(config)
    for seed in (0, 1):  # this launch: the same jobs again, and one whose run.json got damaged
        make_run(
            sweep_dir / f"{seed}-new",
            record(seed=seed, sweep_id=os.environ["PILOT_SWEEP_ID"] if with_ids else None, run_id=f"new-{seed}"),
        )
    make_run(sweep_dir / "2-new", "{broken")
    if with_ids:  # another launch into the same directory, at the same time: judged apart, left out here
        make_run(sweep_dir / "0-other", record(seed=0, sweep_id="another-launch", run_id="other-0"))
    callback.on_multirun_end(config)
    recap = pd.read_csv(sweep_dir / "recap.csv")
    assert sorted(recap["run_id"].dropna()) == ["new-0", "new-1"] and (recap["status"] == "unreadable").sum() == 1
    left_out = 3 if with_ids else 2
    assert f"Left out: {left_out} run directory(ies) already in this directory" in (sweep_dir / "recap.md").read_text()
    entry = journal.read_text()
    assert f"sweep concluded ({sweep_dir})" in entry and "3 run(s): ok 2, unreadable 1" in entry


def test_the_callback_without_a_sweep_directory_says_so(tmp_path, capsys):
    config = callback_config(tmp_path / "never_made", tmp_path / "journal.md")
    callback = RecapCallback()
    callback.on_multirun_start(config)
    callback.on_multirun_end(config)
    assert "nothing to recap" in capsys.readouterr().out and not (tmp_path / "never_made").exists()


def test_a_sweep_whose_recap_cannot_be_written_is_remembered_for_the_exit_code(tmp_path, capsys, monkeypatch):
    """python -m pilot -m exits 1 when its recap could not be written (a full disk): it exited 0 before,
    so a script gated on it went on without the recap."""
    import pilot.recap
    import pilot.recap.entry as entry

    sweep_dir = tmp_path / "sweep"
    make_run(sweep_dir / "0-a", record())
    config = callback_config(sweep_dir, tmp_path / "journal.md")

    def no_room(*args, **kwargs):
        raise RecapRefused("cannot write the recap into it: No space left on device")

    monkeypatch.setattr(pilot.recap, "build_recap", no_room)  # the callback reaches it through the package
    callback = RecapCallback()
    callback.on_multirun_start(config)
    callback.on_multirun_end(config)
    assert "cannot write the recap" in capsys.readouterr().err
    assert entry.recap_not_written() and not entry.recap_not_written()  # said once, then counted afresh


def test_a_journal_that_cannot_be_appended_to_is_named_and_the_recap_kept(tmp_path, capsys):
    sweep_dir, journal = tmp_path / "sweep", tmp_path / "a_directory"
    journal.mkdir()
    config = callback_config(sweep_dir, journal)
    callback = RecapCallback()
    callback.on_multirun_start(config)
    make_run(sweep_dir / "0-new", record())
    callback.on_multirun_end(config)  # no exception: Hydra would only warn with its text
    assert (sweep_dir / "recap.csv").exists()
    assert f"campaign.journal='{journal}' cannot be appended to" in capsys.readouterr().err


@pytest.mark.parametrize("arguments", [["--out", ""], ["--out", "  "], [""]])
def test_an_empty_directory_argument_is_refused_not_read_as_the_current_directory(
    tmp_path, capsys, monkeypatch, arguments
):
    run = make_run(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([str(run), *arguments, "--no-plot"])
    assert exit_.value.code == 2 and "empty: name a directory" in capsys.readouterr().err
    assert not list(tmp_path.glob("recap.*")) and not (run / "recap.csv").exists()


@pytest.mark.parametrize("value", ["-0.5", "nan", "lots"])
def test_a_quality_tolerance_that_is_not_a_share_is_refused(tmp_path, capsys, value):
    run = make_run(tmp_path / "run")
    with pytest.raises(SystemExit) as exit_:
        main([str(run), "--quality-tolerance", value, "--no-plot"])
    said = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument --quality-tolerance: '{value}'" in said, said  # -0.5 was "an option"
    assert not (run / "recap.csv").exists()


@pytest.mark.parametrize(
    "control, said",
    [
        ("optim.lrr=1e-4", "no variant sets optim.lrr (did you mean optim.lr?)"),
        ("optim.lr=9", "no variant has optim.lr=9; its values: 0.0001"),
        ("garbage", "garbage is not key=value"),
        ("optim.lr=1e-4,optim.lr=3e-3", "optim.lr is given twice"),  # the last value won: a wrong control
    ],
)
def test_a_control_that_is_none_of_the_variants_is_refused_before_writing(tmp_path, capsys, control, said):
    run = make_run(tmp_path / "run")
    with pytest.raises(SystemExit) as exit_:
        main([str(run), "--control", control, "--no-plot"])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and f"--control {control}: {said}" in error and "Traceback" not in error
    assert not (run / "recap.csv").exists()
    main([str(run), "--control", "optim.lr=1e-4", "--no-plot"])  # the variant's own value, written another way
    assert (run / "recap.csv").exists()


def test_a_control_is_checked_on_a_directory_without_runs_and_in_the_conclusions(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "empty"), "--control", "optim.lr=1e-4", "--no-plot"])
    assert exit_.value.code == 2 and "no variant sets optim.lr" in capsys.readouterr().err
    assert not (tmp_path / "empty" / "recap.csv").exists()
    make_run(tmp_path / "runs" / "a", record())
    make_run(tmp_path / "runs" / "b", record(variant="optim.lr=0.0002", run_id="b"))
    frame = build_recap([tmp_path / "runs"], tmp_path / "out", control="optim.lr=9", plot=False)  # as a sweep's end
    assert "The control (optim.lr=9) compares nothing here: no variant has optim.lr=9" in " ".join(
        frame.attrs["conclusions"]
    )


def test_a_running_run_no_process_holds_is_said_to_have_ended_unrecorded(tmp_path):
    """kill -9 leaves run.json 'running': the recap keeps that status (the record's last word) and says in
    stop_cause that no process holds the run (its lock, on this host, is free); a held one says nothing."""
    from pilot.recap.reading import read_run
    from pilot.run_record import RunDirectoryLock

    killed = make_run(tmp_path / "killed", record(status="running", finished_at=MISSING, stop_cause=MISSING))
    lock = RunDirectoryLock(killed).acquire()  # a process wrote it, then died: the kernel dropped the lock
    lock.release()
    row = read_run(killed)
    assert row["status"] == "running"
    assert "no process holds it" in row["stop_cause"] and "resume with the same command" in row["stop_cause"]
    assert "from update 0: it wrote no checkpoint" in row["stop_cause"]  # it said "from its last checkpoint"
    assert (
        "or a full disk or read-only directory its record could not be written to" in row["stop_cause"]
    )  # a cause it left out
    (killed / "checkpoints").mkdir()
    (killed / "checkpoints" / "ckpt-00000010.pt").write_bytes(b"saved")
    swept = {**json.loads((killed / "run.json").read_text()), "sweep_id": "s1", "overrides": ["optim.lr=0.1"]}
    (killed / "run.json").write_text(json.dumps(swept))
    said = read_run(killed)["stop_cause"]  # a sweep's job: its own command, not the sweep's -m line
    assert f"resume this job: python -m pilot optim.lr=0.1 hydra.run.dir={killed}" in said, said
    assert "(from its last checkpoint)" in said
    live = make_run(tmp_path / "live", record(status="running", finished_at=MISSING, stop_cause=MISSING))
    held = RunDirectoryLock(live).acquire()
    try:
        assert not read_run(live).get("stop_cause")
    finally:
        held.release()
    other_host = make_run(tmp_path / "other", record(status="running", finished_at=MISSING, stop_cause=MISSING))
    (other_host / RunDirectoryLock.NAME).write_text("pid 12 on host another-node")  # a cluster node: cannot tell
    assert not read_run(other_host).get("stop_cause")
    # the headline counted the killed run as running beside a sweep that had exited (an examination)
    for index, run in enumerate((killed, live, other_host)):
        (run / "run.json").write_text(json.dumps({**json.loads((run / "run.json").read_text()), "run_id": f"r{index}"}))
    held = RunDirectoryLock(live).acquire()
    try:
        build_recap([tmp_path], tmp_path / "out", plot=False)
    finally:
        held.release()
    headline = (tmp_path / "out" / "recap.md").read_text().split("Statuses: ")[1].splitlines()[0]
    assert "running (no process: ended unrecorded) 1" in headline and "running 2" in headline, headline


def test_jobs_a_sweep_declared_that_left_no_directory_are_named(tmp_path):
    """A sweep stopped before its second job (Ctrl-C, SIGTERM): the recap said "1 run(s)" and nothing of
    the job multirun.yaml declared but that never started."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4\n    - mode=train\n"
    )
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3", "mode=train"], variant="optim.lr=0.001"))
    build_recap([sweep], tmp_path / "out", plot=False)
    text = (tmp_path / "out" / "recap.md").read_text()
    assert "Never started: 1 of the 2 jobs" in text and "optim.lr=0.0001 mode=train" in text, text
    make_run(sweep / "1", record(overrides=["optim.lr=1e-4", "mode=train"], run_id="b"))  # both ran
    build_recap([sweep], tmp_path / "out", plot=False)
    assert "Never started" not in (tmp_path / "out" / "recap.md").read_text()


def test_a_sweep_of_pilots_is_not_said_never_started(tmp_path):
    """python -m pilot -m seed=0,1 (mode=pilot): both pilots ran and passed, and the launch said "the sweep is
    incomplete: Never started: 2 of the 2 jobs", exit 1 — pilot runs are not training runs and the recap leaves
    them out of its rows, but they started. A job that neither a training run nor a pilot holds still is named."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - seed=0,1,2\n"
    )
    for seed in (0, 1):
        make_run(sweep / str(seed), record(overrides=[f"seed={seed}"], mode="pilot", run_id=f"p{seed}"))
    build_recap([sweep], tmp_path / "out", plot=False)
    text = (tmp_path / "out" / "recap.md").read_text()
    assert "Never started: 1 of the 3 jobs" in text and "seed=2" in text and "seed=0" not in text, text


def test_a_recap_of_some_jobs_says_nothing_of_the_others_and_keeps_the_launchs_recap(tmp_path):
    """python -m pilot.recap sweep/0 said the sweep's other jobs had no run directory (they had), and
    --out sweep replaced the launch's recap with that one, no copy kept."""
    from pilot.recap.entry import main

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4\n    - mode=train\n"
    )
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3", "mode=train"], variant="optim.lr=0.001"))
    make_run(sweep / "1", record(overrides=["optim.lr=1e-4", "mode=train"], run_id="b"))
    build_recap([sweep / "0"], tmp_path / "out", plot=False)
    assert "Never started" not in (tmp_path / "out" / "recap.md").read_text()
    build_recap([sweep], sweep, plot=False)  # the launch's
    launch = (sweep / "recap.md").read_text()
    main([str(sweep / "1"), "--out", str(sweep), "--no-plot"])
    kept = sorted(p.name for p in sweep.glob("recap-*.md"))
    assert len(kept) == 1 and (sweep / kept[0]).read_text() == launch, kept
    main([str(sweep), "--no-plot"])  # the directory's own recap again: replaced, nothing more kept
    assert len(list(sweep.glob("recap-*.md"))) == 1


def test_a_recap_of_a_sweep_judges_it_against_the_control_its_launch_declared(tmp_path, capsys):
    """python -m pilot.recap <sweep> said "No control declared (campaign.control)" of a sweep launched with
    campaign.control='optim.lr=1e-3', whose launch's recap had compared every variant with it. The control and
    quality tolerance are read from the sweep's multirun.yaml when the command line gives none."""
    from pilot.recap.entry import main

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4\ncampaign:\n  control: optim.lr=1e-3\n"
        "  quality_tolerance: 0.05\n"
    )
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3"], variant="optim.lr=0.001"))
    make_run(sweep / "1", record(overrides=["optim.lr=1e-4"], run_id="b"))
    main([str(sweep), "--no-plot"])
    said = (sweep / "recap.md").read_text()
    assert "No control declared" not in said and "declared tolerance 5% of the control's" in said, said
    frame = pd.read_csv(sweep / "recap.csv")
    assert "campaign.control='optim.lr=1e-3', quality_tolerance=0.05 as declared in" in capsys.readouterr().out
    main([str(sweep), "--no-plot", "--control", "optim.lr=1e-4"])  # the command line's own wins
    out = capsys.readouterr().out
    assert "campaign.control" not in out and "quality_tolerance=0.05 as declared" in out, out
    assert len(frame) == 2


def test_a_recap_over_the_sweeps_own_that_cannot_be_finished_leaves_it_under_its_names(tmp_path, monkeypatch, capsys):
    """--out a sweep holding its launch's recap, and the disk full: the earlier recap was moved to
    recap-<time>.* before the new one was written, so recap.csv/.md/.png were gone when it failed.
    It is kept as a second name of the same files: still under its own, and kept once however often it fails."""
    import pandas as pd

    from pilot.recap.entry import main

    sweep = tmp_path / "sweep"
    make_run(sweep / "0", record())
    build_recap([sweep], sweep, plot=False)
    before = {name: (sweep / name).read_bytes() for name in ("recap.csv", "recap.md")}
    make_run(sweep / "1", record(run_id="b"))

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", no_room)
    for _ in range(2):
        with pytest.raises(SystemExit) as refused:
            main([str(sweep / "1"), "--out", str(sweep), "--no-plot"])  # some jobs, into the sweep
        assert refused.value.code == 2
    assert "the earlier recap there is left as it was" in capsys.readouterr().err
    assert {name: (sweep / name).read_bytes() for name in before} == before
    (kept,) = sweep.glob("recap-*.md")
    assert kept.read_bytes() == before["recap.md"]


def test_a_job_resumed_under_forced_overrides_is_still_the_job_the_sweep_declared(tmp_path):
    """checkpoint.force_resume=true budget.value=30 on a job declared with budget.value=100: the recap
    listed that finished job as never started and told to run it again."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4\n"
        "    - budget.value=100\n"
    )
    forced = ["optim.lr=1e-3", "budget.value=30", "checkpoint.force_resume=true"]
    resumes = [{"overrides_before": ["optim.lr=1e-3", "budget.value=100"], "from_update": 8}]
    make_run(sweep / "0", record(overrides=forced, variant="budget.value=30,optim.lr=0.001", resumes=resumes))
    make_run(sweep / "1", record(overrides=["optim.lr=1e-4", "budget.value=100"], run_id="b"))
    build_recap([sweep], tmp_path / "out", plot=False)
    text = (tmp_path / "out" / "recap.md").read_text()
    assert "Never started" not in text, text
    assert "_overrides_before" not in (tmp_path / "out" / "recap.csv").read_text()


def test_a_job_directory_without_a_record_beside_a_sweeps_runs_makes_no_false_never_started_line(tmp_path):
    """A job stopped as it started left .hydra/ and no run.json: without a sweep_id it was judged as a
    sweep of its own, and recap.md said both jobs never started, beside the run of the first."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4,1e-5\n    - mode=train\n"
    )
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3", "mode=train"], variant="optim.lr=0.001", sweep_id="s"))
    (sweep / "1" / ".hydra").mkdir(parents=True)  # Hydra's files, no run.json: unreadable
    build_recap([sweep], tmp_path / "out", plot=False)
    lines = [line for line in (tmp_path / "out" / "recap.md").read_text().splitlines() if "Never started" in line]
    assert len(lines) == 1 and lines[0].startswith("Never started: 2 of the 3 jobs"), lines
    assert "(1 unreadable run(s) may be some of them)" in lines[0] and "optim.lr=0.001 " not in lines[0]


def test_a_recap_stopped_by_a_signal_says_one_line_and_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the recap wrote its files: a KeyboardInterrupt traceback, and a .recap.<pid>.tmp.csv
    left behind after every signal (five signals, five files); a SIGKILLed recap's are removed by the next."""
    import pilot.recap.entry as entry
    import pilot.recap.outputs as outputs

    sweep = tmp_path / "sweep"
    make_run(sweep / "0", record())
    (sweep / ".recap.999999999.tmp.csv").write_text("run_dir,\n")  # a killed recap's (no such process)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "_recap_text", ctrl_c)
    with pytest.raises(SystemExit) as stopped:
        entry.main([str(sweep), "--no-plot"])
    assert stopped.value.code == 130
    err = capsys.readouterr().err
    assert (
        err.strip()
        == "pilot.recap: interrupted (SIGINT); nothing was written (an earlier recap there, if any, is left as it was)"
    )
    assert not list(sweep.glob(".recap*")) and not (sweep / "recap.md").exists()


def test_a_recap_out_path_that_is_a_file_is_refused_as_such(tmp_path, capsys):
    """--out naming a file said "File exists; an earlier recap there is left as it was"."""
    from pilot.recap import main

    make_run(tmp_path / "sweep" / "0", record())
    (tmp_path / "afile").write_text("mine\n")
    with pytest.raises(SystemExit) as refused:
        main([str(tmp_path / "sweep"), "--out", str(tmp_path / "afile"), "--no-plot"])
    assert refused.value.code == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.parametrize("in_the_way", ["recap.png", "recap.md"])
def test_a_directory_where_a_recap_file_goes_is_refused_before_the_earlier_recap_is_touched(
    tmp_path, capsys, in_the_way
):
    """recap.png (or recap.md) a directory: recap.csv (and recap.png) were replaced, then the message said the
    earlier recap was left as it was (or that nothing of it was left there)."""
    sweep = tmp_path / "sweep"
    make_run(sweep / "0", record())
    build_recap([sweep], sweep, plot=False)
    make_run(sweep / "1", record(run_id="run-1", seed=1))
    before = {name: (sweep / name).read_bytes() for name in ("recap.csv", "recap.md") if name != in_the_way}
    (sweep / in_the_way).unlink(missing_ok=True)
    (sweep / in_the_way).mkdir()
    with pytest.raises(SystemExit) as refused:
        main([str(sweep), "--no-plot"])
    assert refused.value.code == 2
    said = capsys.readouterr().err
    assert "is a directory where the recap writes a file" in said and "left as it was" in said
    assert {name: (sweep / name).read_bytes() for name in before} == before
    assert not list(sweep.glob(".recap*"))


def test_one_directory_named_two_ways_is_one_row(tmp_path, monkeypatch):
    """``sweep`` and its absolute path, ``a/../sweep`` or a link to it: 16 rows for 8 runs before."""
    sweep = tmp_path / "sweep"
    for seed in (0, 1):
        make_run(sweep / f"{seed}-run", record(seed=seed, run_id=f"run-{seed}"))
    (tmp_path / "link").symlink_to(sweep)
    monkeypatch.chdir(tmp_path)
    named = [Path("sweep"), sweep, tmp_path / "other" / ".." / "sweep", tmp_path / "link", Path("sweep/0-run")]
    (tmp_path / "other").mkdir()
    frame = collect(named)
    assert sorted(frame["run_id"]) == ["run-0", "run-1"] and sorted(frame["run_dir"]) == ["sweep/0-run", "sweep/1-run"]


def test_a_finished_runs_metrics_must_reach_what_its_record_says(tmp_path):
    """An ok run with 6 updates: an emptied metrics.jsonl read as 0 updates, and one whose final
    validation line was cut read its update-3 validation as the run's result."""
    whole = metrics(final_val=1.5)
    cut = whole[: whole.rstrip("\n").rfind("\n") + 1] + whole.rstrip("\n").rsplit("\n", 1)[1][:20]
    without_val = "".join(line + "\n" for line in whole.splitlines() if '"val"' not in line)
    runs = {
        "whole": make_run(tmp_path / "whole", record(updates_done=6, run_id="whole"), whole),
        "empty": make_run(tmp_path / "empty", record(updates_done=6, run_id="empty"), ""),
        "cut": make_run(tmp_path / "cut", record(updates_done=6, run_id="cut"), cut),
        "interrupted": make_run(
            tmp_path / "stopped", record(updates_done=6, run_id="stopped", status="interrupted"), ""
        ),
        # its only validation (a budget under loop.eval_every) cut: it was recapped ok, with no value
        "only": make_run(tmp_path / "only", record(updates_done=6, run_id="only"), without_val),
    }
    frame = collect([tmp_path]).set_index("run_dir")
    assert frame.loc[str(runs["whole"]), "status"] == "ok" and frame.loc[str(runs["whole"]), "final_val_loss"] == 1.5
    assert frame.loc[str(runs["empty"]), "status"] == "unreadable"
    assert "ends at update 0 but run.json says 6" in frame.loc[str(runs["empty"]), "stop_cause"]
    assert frame.loc[str(runs["cut"]), "status"] == "unreadable"
    assert "final validation (after update 6) is missing" in frame.loc[str(runs["cut"]), "stop_cause"]
    assert frame.loc[str(runs["interrupted"]), "status"] == "interrupted"  # a signal's run: as it recorded
    assert frame.loc[str(runs["only"]), "status"] == "unreadable"
    assert "no validation line is left" in frame.loc[str(runs["only"]), "stop_cause"]


def test_a_control_whose_runs_are_unreadable_is_said_not_refused(tmp_path):
    """The control's metrics.jsonl deleted: the recap refused to be written ("no variant has
    optim.lr=1e-4"), as if the control had never run."""
    make_run(tmp_path / "control", record(run_id="control"), MISSING)
    make_run(
        tmp_path / "other",
        record(run_id="other", variant="optim.lr=0.0002", overrides=["optim.lr=2e-4", "seed=0"]),
    )
    main([str(tmp_path), "--control", "optim.lr=1e-4", "--no-plot"])
    text = (tmp_path / "recap.md").read_text()
    assert "The control (optim.lr=1e-4) has no readable run" in text and "unreadable" in text


def test_a_variant_whose_runs_are_all_unreadable_shows_no_value_and_no_change_of_the_task(tmp_path):
    """Two variants' final validation lines cut: the recap said they "change the task" (a variant row with
    nothing read had no task cell: NaN, read as true) and showed the earlier point that would stand in."""
    whole = metrics(final_val=1.5)
    cut = whole[: whole.rstrip("\n").rfind("\n") + 1]
    make_run(tmp_path / "control", record(run_id="control", updates_done=6), whole)
    other = record(run_id="other", variant="optim.lr=0.0002", overrides=["optim.lr=2e-4", "seed=0"], updates_done=6)
    make_run(tmp_path / "other", other, cut)
    main([str(tmp_path), "--control", "optim.lr=1e-4", "--no-plot"])
    text = (tmp_path / "recap.md").read_text()
    assert "final validation (after update 6) is missing" in text and "Changes the task" not in text
    frame = collect([tmp_path]).set_index("run_id")
    assert frame.loc["other", "status"] == "unreadable" and pd.isna(frame.loc["other", "final_val_loss"])


def test_a_copied_run_directory_is_one_run_not_a_repeat(tmp_path):
    """cp -r 1-run 1-run.bak (the same run_id): "runs 2, repeats 1" and "Statuses: ok 3" for two runs."""
    sweep = tmp_path / "sweep"
    make_run(sweep / "0-run", record(seed=0, run_id="run-0"))
    make_run(sweep / "1-run", record(seed=1, run_id="run-1"))
    make_run(sweep / "1-run.bak", record(seed=1, run_id="run-1"))
    frame = build_recap([sweep], tmp_path / "out", plot=False)
    assert sorted(frame["run_dir"]) == [str(sweep / "0-run"), str(sweep / "1-run")]
    text = (tmp_path / "out" / "recap.md").read_text()
    assert "Statuses: ok 2" in text and "Counted once: run run-1 is in 2 directories" in text
    assert f"left out: {sweep / '1-run.bak'}" in text


def test_a_recap_without_its_picture_removes_the_earlier_recaps_picture(tmp_path):
    """--no-plot left the earlier recap.png (4 runs) beside a new recap.md (8 runs)."""
    make_run(tmp_path / "sweep" / "0", record(run_id="a"))
    build_recap([tmp_path / "sweep"], tmp_path / "out", plot=True)
    assert (tmp_path / "out" / "recap.png").is_file()
    build_recap([tmp_path / "sweep"], tmp_path / "out", plot=False)
    assert not (tmp_path / "out" / "recap.png").exists() and (tmp_path / "out" / "recap.md").is_file()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "recap.png").write_bytes(b"a user's picture")  # no recap of pilot's beside it
    build_recap([tmp_path / "sweep"], tmp_path / "mine", plot=False)
    assert (tmp_path / "mine" / "recap.png").read_bytes() == b"a user's picture"


def test_a_sweep_stopped_before_any_job_leaves_no_directory_and_no_recap(tmp_path):
    """Ctrl-C during the sweep's up-front checks left multirun.yaml and a 0-run recap telling the user to
    start each job (each of which would have been refused)."""
    from omegaconf import OmegaConf

    import pilot.recap.entry as entry
    import pilot.run_directory as run_directory

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    run_directory._created_sweeps.add(str(sweep))  # made by this line, as the run directory check records
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}, "campaign": {}})
    entry._launch.update(config=config, earlier_runs=frozenset(), multirun_yaml=None)
    assert entry.recap_interrupted_launch("interrupted (SIGINT)") is None
    assert not sweep.exists() and not entry._launch


def test_a_launch_whose_declared_job_left_no_directory_is_remembered_for_the_exit_code(tmp_path):
    """A job refused or lost in its own process (local_parallel, SLURM) leaves no directory and no
    in-process trace: the sweep exited 0. The recap's "Never started" line now makes it exit 1."""
    import pilot.recap.entry as entry

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - optim.lr=1e-3,1e-4\n    - mode=train\n"
    )
    entry.never_started_jobs()  # nothing left from another test
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3", "mode=train"], variant="optim.lr=0.001"))
    entry.recap_launch(callback_config(sweep, tmp_path / "journal.md"), frozenset())
    (line,) = entry.never_started_jobs()
    assert line.startswith("Never started: 1 of the 2 jobs") and not entry.never_started_jobs()


def test_a_variants_unreadable_runs_are_counted_in_its_row(tmp_path):
    """A variant's per-variant row counted its readable runs only: 23 damaged runs of it were in no column."""
    make_run(tmp_path / "a", record())
    make_run(tmp_path / "b", record(run_id="20261130-010000-bbbbbbbbbbbb", seed=1, seconds_per_update="fast"))
    summary, _ = summarise(collect([tmp_path]), "")
    row = summary.set_index("variant").loc["optim.lr=0.0001"]
    assert row["runs"] == 1 and row["unreadable"] == 1


def test_a_variant_whose_every_run_is_unreadable_has_its_row(tmp_path):
    """One seed per variant, its run.json damaged: the variant had no per-variant row, its count nowhere."""
    make_run(tmp_path / "a", record())
    make_run(tmp_path / "b", record(run_id="20261130-010000-bbbbbbbbbbbb", variant="optim.lr=0.001", updates_done="5"))
    summary, lines = summarise(collect([tmp_path]), "optim.lr=0.0001")
    row = summary.set_index("variant").loc["optim.lr=0.001"]
    assert row["runs"] == 0 and row["unreadable"] == 1 and math.isnan(row["mean"]), summary
    assert lines  # the conclusion still drawn


def test_a_sweep_of_pilots_lists_them_and_one_that_did_not_pass_makes_it_exit_1(tmp_path, capsys):
    """An outside examination: python -m pilot -m model.path=a,b (mode=pilot), job 1's pilot failed: the sweep
    exited 0 and its recap said "0 run(s)", nothing of the pilots. Its recap.md now lists them with how each
    ended, and the sweep exits 1 naming the one that did not pass, as that pilot alone would."""
    import pilot.recap.entry as entry
    from pilot.sweep_ending import SweepIncomplete, sweep_ending

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params: null\n  overrides:\n    task:\n    - seed=0,1\n"
    )
    entry.pilots_not_passed(), entry.failed_jobs(), entry.never_started_jobs()  # nothing left from another test
    make_run(sweep / "0", record(overrides=["seed=0"], mode="pilot", run_id="p0", stop_cause="pilot_complete"))
    failed = record(overrides=["seed=1"], mode="pilot", run_id="p1", status="failed", stop_cause="inspect: bad labels")
    make_run(sweep / "1", failed)
    entry.recap_launch(callback_config(sweep, tmp_path / "journal.md"), frozenset())
    text = (sweep / "recap.md").read_text()
    assert "# Recap — 0 run(s), and 2 pilot(s) or estimate(s), listed last" in text, text
    assert "| pilot | failed | inspect: bad labels |" in text and "| pilot | ok | pilot_complete |" in text, text
    with pytest.raises(SweepIncomplete) as ended:
        sweep_ending()
    assert ended.value.code == 1
    said = capsys.readouterr().err
    assert "1 pilot(s) or estimate(s) of the sweep did not pass" in said and "inspect: bad labels" in said, said
    make_run(sweep / "1", {**failed, "status": "ok", "stop_cause": "pilot_complete"})  # both passed: exit 0
    entry.recap_launch(callback_config(sweep, tmp_path / "journal.md"), frozenset())
    sweep_ending()
    # a pilot killed before its verdict (a review): its record still says running once the launch ended
    make_run(sweep / "1", {**failed, "status": "running", "stop_cause": None})
    (sweep / "1" / ".pilot.lock").write_text(f"pid 999999 on host {socket.gethostname()}")  # held by no one
    entry.recap_launch(callback_config(sweep, tmp_path / "journal.md"), frozenset())
    with pytest.raises(SweepIncomplete):
        sweep_ending()
    said = capsys.readouterr().err
    assert "did not pass" in said and "ended without recording how" in said, said


def test_the_recap_of_a_pilots_own_directory_lists_it_not_that_there_is_no_run(tmp_path):
    """python -m pilot.recap <a pilot's run directory> said 'no pilot run under ... (no run.json ...)' beside
    its run.json; a sweep's recap lists its pilots, so this one does too."""
    make_run(tmp_path / "pilot", record(mode="pilot", run_id="p0", stop_cause="pilot_complete"))
    main([str(tmp_path / "pilot"), "--out", str(tmp_path / "out"), "--no-plot"])
    text = (tmp_path / "out" / "recap.md").read_text()
    assert "# Recap — 0 run(s), and 1 pilot(s) or estimate(s), listed last" in text and "| pilot | ok |" in text
    with pytest.raises(SystemExit) as refused:  # nothing pilot wrote: still refused
        main([str(tmp_path / "out"), "--out", str(tmp_path / "out2"), "--no-plot"])
    assert refused.value.code == 2 and not (tmp_path / "out2").exists()


def test_an_option_the_recap_does_not_take_is_named_in_one_line(tmp_path, capsys):
    """python -m pilot.recap --helpp said 'the following arguments are required: paths', under a usage block."""
    for argv, said in (
        (["--helpp"], "unrecognized option --helpp (it takes --help, --out"),
        ([str(tmp_path), "--no-plott"], "unrecognized option --no-plott"),
        ([], "the following arguments are required: paths"),
    ):
        with pytest.raises(SystemExit) as refused:
            main(argv)
        err = capsys.readouterr().err
        assert refused.value.code == 2 and said in err and "Fix: python -m pilot.recap --help" in err, err
        assert "usage:" not in err and len(err.strip().splitlines()) == 1, err


def test_a_variants_peak_memory_is_its_highest_runs_not_their_mean(tmp_path):
    """recap.md's per-variant peak_rss_bytes was the mean of its runs' peaks (4.04e8 where one run held 4.41e8):
    a rental sized by it runs out of memory on the run that peaked."""
    for seed, peak in ((0, 3.0e8), (1, 4.4e8)):
        overrides = [f"seed={seed}"]
        make_run(
            tmp_path / str(seed),
            record(seed=seed, run_id=f"r{seed}", overrides=overrides, peak_memory={"rss_peak_bytes": peak}),
        )
    summary, _ = summarise(collect([tmp_path]), "")
    assert summary.loc[0, "peak_rss_bytes"] == 4.4e8 and summary.loc[0, "s_per_update"] == 0.04


def test_a_variant_that_diverged_in_every_run_is_named_in_the_conclusion(tmp_path):
    """lr=1.0 diverged 2 of 2: the conclusion (and the journal) named only the variant that beat the control."""
    for seed in (0, 1):
        make_run(tmp_path / f"c{seed}", record(seed=seed, run_id=f"c{seed}", overrides=[f"seed={seed}"]))
        wild = record(seed=seed, run_id=f"w{seed}", variant="optim.lr=1.0", status="diverged",
                      overrides=["optim.lr=1.0", f"seed={seed}"], stop_cause="non_finite_loss")  # fmt: skip
        make_run(tmp_path / f"w{seed}", wild)
    _, lines = summarise(collect([tmp_path]), "optim.lr=1e-4")
    assert any("Diverged in every run" in line and "optim.lr=1.0 (2 of 2)" in line for line in lines), lines


def test_a_variant_outside_the_quality_tolerance_with_a_lower_loss_is_not_said_to_have_lost_it(tmp_path):
    """The tolerance is two-sided: a variant 13% below the control's loss was listed "lost by" (an outside
    examination). Lower losses outside it are said apart."""
    sweep = tmp_path / "sweep"
    make_run(sweep / "0", record(overrides=["optim.lr=1e-3"], variant="optim.lr=0.001"), metrics(final_val=1.5))
    make_run(
        sweep / "1", record(overrides=["optim.lr=2e-3"], variant="optim.lr=0.002", run_id="b"), metrics(final_val=1.3)
    )
    make_run(
        sweep / "2", record(overrides=["optim.lr=5e-4"], variant="optim.lr=0.0005", run_id="c"), metrics(final_val=1.7)
    )
    build_recap([sweep], sweep, control="optim.lr=1e-3", quality_tolerance=0.05, plot=False)
    said = (sweep / "recap.md").read_text()
    assert "lost by optim.lr=0.0005; outside it with a lower loss (not lost): optim.lr=0.002." in said, said


def test_a_signal_while_the_recap_loads_pandas_is_one_line_and_its_exit_code(tmp_path, capsys, monkeypatch):
    """SIGTERM or SIGHUP while the declared campaign's reader imported pandas: a SignalStop traceback and exit 1
    (an outside examination, 2026-12-07: 6 of 30 signals sent 1.2-1.5 s after the start)."""
    import pilot.recap.declared as declared
    import pilot.recap.entry as entry
    from pilot.startup_signals import SignalStop

    sweep = tmp_path / "sweep"
    make_run(sweep / "0", record())

    def sigterm(*args, **kwargs):
        raise SignalStop("SIGTERM")

    monkeypatch.setattr(declared, "declared_campaign", sigterm)
    with pytest.raises(SystemExit) as stopped:
        entry.main([str(sweep), "--no-plot"])
    assert stopped.value.code == 143
    assert capsys.readouterr().err.strip().startswith("pilot.recap: interrupted (SIGTERM); nothing was written")
