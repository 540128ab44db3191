"""Phase gates: one row per phase and rank, the contract's columns, honest memory, OOM rows."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from hydra.utils import instantiate

from pilot.child_process import ChildProcess
from pilot.phases.gates import PHASES, PhaseRunner
from pilot.phases.measure import PhaseLog
from pilot.phases.rows import COLUMNS, CUDA_COLUMNS, read_phases_csv, typed_rows, write_phases_csv
from pilot.phases.train_phases import TrainPhases
from pilot.pilot_run import run_phases

REPO = Path(__file__).resolve().parents[1]
CONTRACT = (
    "phase",
    "device",
    "rank",
    "duration_s",
    "verdict",
    "detail",
    "mem_allocated_bytes",
    "mem_reserved_bytes",
    "mem_peak_allocated_bytes",
    "mem_peak_reserved_bytes",
    "mem_baseline_bytes",
    "rss_bytes",
    "rss_peak_bytes",
    "micro_batch",
    "seq_len",
    "precision",
)


@pytest.fixture(scope="module")
def checks_child():
    """One new process for this module's reload and resume checks (each reads everything from disk;
    tests/test_child_process.py shows such a child keeps the checks' guarantee): one import of torch."""
    with ChildProcess(warm=("pilot.closing.cli", "pilot.phases.resume_check"), optimizer=True) as child:
        yield child


def phase_rows(cfg, tmp_path, runner, oom_in_phase=None):
    task = instantiate(cfg.data, _convert_="all")
    return PhaseRunner(cfg, task, torch.device("cpu"), tmp_path, runner=runner, oom_in_phase=oom_in_phase).run()


def test_one_row_per_phase_with_the_contract_columns(make_cfg, tmp_path, checks_child):
    rows = phase_rows(make_cfg(), tmp_path, checks_child)
    assert [r["phase"] for r in rows] == list(PHASES)
    assert set(CONTRACT) <= set(COLUMNS) and all(set(COLUMNS) == set(r) for r in rows)
    for row in rows:
        assert row["verdict"] == "pass", row
        assert row["duration_s"] > 0
        assert 0 <= row["rss_bytes"] <= row["rss_peak_bytes"]  # peak >= after >= 0
        assert row["rss_peak_scope"] == "phase"  # reset per phase on Linux
        assert all(row[c] is None for c in CUDA_COLUMNS)  # empty on CPU, not zero
        assert row["precision"] == "fp32" and row["micro_batch"] >= 1
    by_phase = {r["phase"]: r for r in rows}
    assert by_phase["eval_longest"]["seq_len"] == 96  # the longest validation sequences
    assert by_phase["eval_longest"]["micro_batch"] == 16  # at the evaluation batch size
    assert "bit-identical" in by_phase["resume_check"]["detail"]  # a new process continued the run
    assert "bit-identical" in by_phase["reload_check"]["detail"]
    assert "optimizer state" in by_phase["first_step"]["detail"]
    assert (tmp_path / "export" / "rank0" / "model.safetensors").exists()
    assert list((tmp_path / "checkpoints" / "pilot-rank0").glob("ckpt-*.pt"))


def test_injected_oom_is_a_row_and_the_rest_still_runs(make_cfg, tmp_path, checks_child):
    rows = phase_rows(make_cfg("batch.micro_batch=4"), tmp_path, checks_child, oom_in_phase="first_step")
    by_phase = {r["phase"]: r for r in rows}
    assert by_phase["first_step"]["verdict"] == "oom"
    detail = by_phase["first_step"]["detail"]
    assert "out of memory in first_step" in detail and "'micro_batch': 4" in detail
    assert [r["phase"] for r in rows] == list(PHASES)
    assert by_phase["export"]["verdict"] == "pass"


def test_failed_build_skips_the_phases_that_need_it(make_cfg, tmp_path, checks_child):
    rows = phase_rows(make_cfg(), tmp_path, checks_child, oom_in_phase="build_model")
    assert rows[0]["verdict"] == "oom"
    assert all(r["verdict"] == "skipped" for r in rows[1:])


def test_replicas_each_write_their_rows(make_cfg, tmp_path):
    cfg = make_cfg("distributed=ddp2", "pilot.steady_steps=2")
    rows = run_phases(cfg, instantiate(cfg.data, _convert_="all"), torch.device("cpu"), tmp_path)
    assert sorted((r["rank"], r["phase"]) for r in rows) == sorted((rank, phase) for rank in (0, 1) for phase in PHASES)
    assert {r["replicas"] for r in rows} == {2}
    assert all(r["verdict"] == "pass" for r in rows if (r["rank"], r["phase"]) != (1, "resume_check"))


def run_cli(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "pilot", f"hydra.run.dir={tmp_path / 'run'}", *overrides],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("task", [[], ["+experiment=classification"]])
def test_pilot_cli_passes_and_writes_the_report(tmp_path, task):
    completed = run_cli(tmp_path, *task)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    run = tmp_path / "run"
    for name in ("report.md", "phases.csv", "phases.png", "examples.txt", "checks.json", "run.json"):
        assert (run / name).exists(), name
    frame = pd.read_csv(run / "phases.csv")
    assert list(frame["phase"]) == list(PHASES)
    assert frame[list(CUDA_COLUMNS)].isna().all().all()
    assert (frame["rss_peak_bytes"] >= frame["rss_bytes"]).all()
    report = (run / "report.md").read_text()
    assert "examples per update = 2 (micro-batch) x 8 (accumulation)" in report
    assert "| inspect | pass |" in report and "| tiny_subset | pass |" in report
    assert json.loads((run / "run.json").read_text())["status"] == "ok"
    assert "pilot verdict: pass" in completed.stdout


@pytest.mark.parametrize(
    "overrides, step",
    [
        (["pilot.oom_in_phase=eval_longest"], "phases"),
        pytest.param(["optim.lr=0", "pilot.tiny.max_updates=20"], "tiny_subset", marks=pytest.mark.slow),
    ],
)
def test_pilot_cli_exits_non_zero_on_fail_or_oom(tmp_path, overrides, step):
    completed = run_cli(tmp_path, *overrides)
    assert completed.returncode == 1
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] in ("failed", "oom") and record["stop_cause"].startswith(step)
    assert (tmp_path / "run" / "report.md").exists()  # the report is written all the same
    if "optim.lr=0" in overrides:  # the cause named: no weight moved (the loss numbers alone, before)
        assert "No trainable weight changed in 20 updates: optim.lr=0" in record["stop_cause"]


def test_a_crashed_phase_keeps_its_whole_error_in_the_run_directory(tmp_path):
    log = PhaseLog(torch.device("cpu"), 0, {}, error_dir=tmp_path)
    with log.measure("export"):
        raise RuntimeError("Error while saving: tensors share memory\nsecond line with the names")
    row = log.rows[-1]
    assert row["verdict"] == "fail"
    assert row["detail"] == "RuntimeError: Error while saving: tensors share memory (whole error: export.error.txt)"
    whole = (tmp_path / "export.error.txt").read_text()
    assert "second line with the names" in whole and "Traceback" in whole


def test_a_training_runs_phases_are_on_disk_as_each_ends_and_its_peaks_hold_earlier_attempts(tmp_path):
    """phases.csv was written once, when the run ended: an attempt killed outright (kill -9, a lost node)
    left no row, and run.json's peak "over every attempt" was the last attempt's alone."""
    write_phases_csv(tmp_path, [{"phase": "first_step", "rank": 0, "rss_peak_bytes": 7 * 2**40}])  # attempt 1
    phases = TrainPhases(torch.device("cpu"), 0, {"micro_batch": 4})
    phases.keep(tmp_path, attempt=2)
    phases.begin("build_model")
    phases.end(detail="built")  # on disk now, after attempt 1's row; nothing else written yet
    frame = pd.read_csv(tmp_path / "phases.csv")
    assert frame["phase"].tolist() == ["first_step", "build_model"] and frame["attempt"].tolist() == [1, 2]
    assert phases.peaks()["rss_peak_bytes"] == 7 * 2**40  # attempt 1's peak, which no run.json holds
    phases.begin("first_step")
    phases.end()
    phases.write(tmp_path, attempt=2)  # the run's end: the same attempt, not a third
    assert pd.read_csv(tmp_path / "phases.csv")["attempt"].tolist() == [1, 2, 2]


def test_phases_csv_keeps_earlier_rows_exactly_and_sets_an_unreadable_file_aside(tmp_path):
    first = {
        "phase": "first_step",
        "rank": 0,
        "duration_s": 0.25,
        "detail": 'a, "quoted"\ndetail',
        "rss_bytes": 2**60 + 1,
    }
    resumed = {"phase": "steady_steps", "rank": 1, "duration_s": None, "loss": float("nan"), "seq_len": 3.0}
    write_phases_csv(tmp_path, [first])
    write_phases_csv(tmp_path, [resumed], keep_earlier=True)  # a resumed run appends
    frame = pd.read_csv(tmp_path / "phases.csv")
    assert list(frame.columns) == list(COLUMNS) and frame["phase"].tolist() == ["first_step", "steady_steps"]
    assert frame["attempt"].tolist() == [1, 2]  # the resume's rows are told from the first attempt's
    write_phases_csv(tmp_path, [resumed, resumed], keep_earlier=True)  # resumed again
    assert pd.read_csv(tmp_path / "phases.csv")["attempt"].tolist() == [1, 2, 3, 3]
    (tmp_path / "phases.csv").write_text("phase,rank\nfirst_step,0\n")  # written before the column existed
    write_phases_csv(tmp_path, [resumed], keep_earlier=True)
    assert pd.read_csv(tmp_path / "phases.csv")["attempt"].tolist() == [1, 2]
    assert frame["detail"][0] == first["detail"] and frame["rss_bytes"][0] == 2**60 + 1  # exact, not a float
    assert [row["seq_len"] for row in typed_rows(frame.to_dict("records"))] == [None, 3]
    assert pd.isna(frame["duration_s"][1]) and pd.isna(frame["loss"][1])
    for damaged in (b"\xff\xfe not text\n", b"phase,rank\nfirst_step,0,extra\n", b"", b"phase,rank\nfirst_st"):
        (tmp_path / "phases.csv").write_bytes(damaged)
        write_phases_csv(tmp_path, [resumed], keep_earlier=True)
        assert (tmp_path / "phases.unreadable.csv").read_bytes() == damaged  # kept, never overwritten in place
        assert pd.read_csv(tmp_path / "phases.csv")["phase"].tolist() == ["steady_steps"]


def test_phases_csv_reads_back_typed_without_pandas(tmp_path):
    """What the report and the picture read (no pandas in the pilot's process): counts and bytes whole and
    exact at any size, a duration a float, an empty cell None; a file that is not text cannot be read."""
    row = {"phase": "first_step", "rank": 0, "duration_s": 0.25, "rss_bytes": 2**60 + 1, "detail": "a, b"}
    write_phases_csv(tmp_path, [row, {"phase": "export", "seq_len": 7.0, "duration_s": float("nan")}])
    first, second = read_phases_csv(tmp_path / "phases.csv")
    assert (first["rank"], first["duration_s"], first["rss_bytes"], first["detail"]) == (0, 0.25, 2**60 + 1, "a, b")
    assert first["seq_len"] is None and first["mem_peak_allocated_bytes"] is None
    assert (second["seq_len"], second["duration_s"], second["rank"]) == (7, None, None)
    (tmp_path / "phases.csv").write_bytes("\ufeffphase,duration_s\nexport,1.5\n".encode())  # saved by a spreadsheet
    assert [(r["phase"], r["duration_s"]) for r in read_phases_csv(tmp_path / "phases.csv")] == [("export", 1.5)]
    for damaged, said in (
        (b"\xff\xfe not text\n", "utf-8"),
        (b"", "empty"),
        (b"<html>not a table</html>\n", "'phase'"),
    ):
        (tmp_path / "phases.csv").write_bytes(damaged)
        with pytest.raises(ValueError, match=said):
            read_phases_csv(tmp_path / "phases.csv")


def test_a_warn_row_is_named_in_the_phases_verdict_and_the_pilot_says_warn(tmp_path):
    """A training that is not bit-reproducible (tests._noisy_model): the resume_check row is a warn, the
    phases step names it (not 'all pass'), and the pilot's verdict is warn, exit 0."""
    completed = run_cli(tmp_path, "+experiment=classification", "model._target_=tests._noisy_model.NoisyMLP")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    checks = {c["step"]: c for c in json.loads((tmp_path / "run" / "checks.json").read_text())}
    assert checks["phases"]["verdict"] == "warn" and "resume_check (rank 0): warn" in checks["phases"]["reason"]
    assert "pilot verdict: warn" in completed.stdout


def test_the_cpu_allocators_refusal_is_out_of_memory_not_a_failure(tmp_path):
    """On a CPU, PyTorch raises running out of memory as a plain RuntimeError ("DefaultCPUAllocator: can't
    allocate memory"): a phase and a training run recorded it as fail/failed, never oom (an outside
    examination, the README promising oom)."""
    from pilot.errors import out_of_memory
    from pilot.phases.measure import PhaseLog

    refused = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 225312768 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert out_of_memory(refused) and out_of_memory(MemoryError()) and not out_of_memory(RuntimeError("shapes"))
    log = PhaseLog(torch.device("cpu"), 0, {}, error_dir=tmp_path)
    with log.measure("first_step"):
        raise refused
    with log.measure("steady_steps"):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    assert [row["verdict"] for row in log.rows] == ["oom", "fail"]


def test_a_micro_batch_larger_than_the_split_records_what_the_updates_held(make_cfg, tmp_path, checks_child):
    """batch.micro_batch=1000000 over a split of 573: phases.csv recorded 8,000,000 examples for first_step and
    a throughput of 3.5 million examples/s, the declared product, while every update held the 573."""
    cfg = make_cfg("batch.micro_batch=100000", "pilot.steady_steps=2")
    task = instantiate(cfg.data, _convert_="all")
    task.splits = {name: examples[:48] for name, examples in task.splits.items()}  # every update: the whole split
    rows = PhaseRunner(cfg, task, torch.device("cpu"), tmp_path, runner=checks_child).run()
    by_phase = {r["phase"]: r for r in rows}
    held = by_phase["first_step"]["examples"]
    assert held == 48 and by_phase["steady_steps"]["examples"] == 2 * held, by_phase["first_step"]


def test_no_space_in_a_step_whose_error_names_no_file_names_the_steps_files(make_cfg, tmp_path):
    """A full disk while the resume check's config.yaml was flushed (an OSError without a file name): the pilot
    said 'no space left on the device writing a file of the run' (an outside examination, 2026-12-07)."""
    import errno

    cfg = make_cfg()
    phases = PhaseRunner(cfg, instantiate(cfg.data, _convert_="all"), torch.device("cpu"), tmp_path)

    def flushed_into_a_full_disk():
        raise OSError(errno.ENOSPC, "No space left on device")

    from pilot.errors import DiskFull

    with pytest.raises(DiskFull) as full:  # the pilot ends with it: one message, exit 2
        phases.run_phase("resume_check", {}, flushed_into_a_full_disk)
    assert f"no space left on the device writing the resume_check step's files in {tmp_path}" in str(full.value)
