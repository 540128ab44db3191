"""Every record tells the truth (issue 11, items 1-8): defining keys, forced resumes, signals,
non-finite checkpoints, validation rows around kills, damaged checkpoints, disk full, the run lock."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import run_pilot

from pilot.checkpoint import (
    Checkpointer,
    clean_temporary_files,
    defining_config,
    latest_valid_checkpoint,
    list_checkpoints,
    training_state,
)
from pilot.closing.cli import main as closing_main
from pilot.engine.build import build_trainer
from pilot.engine.preemption import InterruptWatch, watched_signals
from pilot.errors import DiskFull, RunDirectoryBusy
from pilot.phases import rows as phase_rows
from pilot.phases.rows import read_phases_csv
from pilot.run_record import RunDirectoryLock, now_text
from pilot.train import train
from pilot.variant import is_defining, variant_key

REPO = Path(__file__).resolve().parents[1]
# digits, 10 updates of 16 examples: a few seconds per run
TRAIN = [
    "mode=train",
    "+experiment=classification",
    "budget.fixed=updates",
    "budget.value=10",
    "batch.micro_batch=8",
    "checkpoint.every=2",
    "loop.eval_every=4",
    "closing.control_examples=0",
    "run.threads=1",
]


def cli(run_dir, *overrides, fault=None, train_args=TRAIN, wait=True):
    env = {k: v for k, v in os.environ.items() if k != "PILOT_FAULT"}
    if fault:
        env["PILOT_FAULT"] = fault
    command = [sys.executable, "-m", "pilot", *train_args, f"hydra.run.dir={run_dir}", *overrides]
    if not wait:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def run_json(run_dir):
    return json.loads((Path(run_dir) / "run.json").read_text())


def metric_rows(run_dir, kind):
    rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    return [row["update"] for row in rows if row["kind"] == kind]


def final_weights(run_dir):
    _, state = latest_valid_checkpoint(Path(run_dir) / "checkpoints")
    return state["position"]["updates_done"], state["model"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reference")
    done = cli(run_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    closing = run_json(run_dir)["closing"]  # closing.control_examples=0: said, not left out of the record
    assert closing["verdict"] == "skipped" and "no export written" in closing["reason"], closing
    assert not (run_dir / "export").exists() and "closing: closing.control_examples=0" in done.stdout + done.stderr
    return run_dir, final_weights(run_dir)


def assert_same_run(run_dir, reference):
    updates, weights = final_weights(run_dir)
    reference_updates, reference_weights = reference[1]
    assert updates == reference_updates == 10
    assert all(torch.equal(weights[k], reference_weights[k]) for k in reference_weights)  # bit for bit
    assert metric_rows(run_dir, "train") == list(range(1, 11))
    assert metric_rows(run_dir, "val") == [4, 8, 10]  # each validation point exactly once


# ----------------------------------------------------------------------------- 1. defining keys
def test_every_config_group_key_defines_the_run(make_cfg):
    cfg = make_cfg()
    flat = defining_config(cfg)
    for group in ("model", "data", "precision", "batch", "optim", "budget", "distributed", "memory"):
        keys = [k for k in flat if k.startswith(group + ".")]
        assert keys, f"no defining key from {group}"
    assert all(is_defining(k) for k in ("model.d_model", "model.n_layer", "mode_of_thing", "memory.x"))
    assert not any(
        is_defining(k)
        for k in (
            "mode",
            "run.threads",
            "checkpoint.every",
            "pilot.show_examples",
            "distributed.master_port",
            "closing.rtol",
        )
    )
    assert "model.d_model" in variant_key(["model.d_model=64", "mode=train", "seed=3"], cfg)
    assert variant_key(["mode=train", "seed=3"]) == "default"
    twice = variant_key(["optim.lr=1e-3", "optim.lr=2e-3"], make_cfg("optim.lr=1e-3", "optim.lr=2e-3"))
    assert twice == "optim.lr=0.002"  # a key given twice: once, with the value Hydra applied (the last)
    chosen = variant_key(["optim.schedule=constant"], make_cfg("optim.schedule=constant"))
    assert chosen == "optim.schedule=constant"  # a choice as typed, not its enum's repr (Schedule.constant)


def test_a_model_change_refuses_the_resume(tmp_path):
    first = cli(tmp_path, "budget.value=4", "checkpoint.every=2", "loop.eval_every=0", fault="update@3")
    assert first.returncode == -9
    before = (tmp_path / "run.json").read_text()
    refused = cli(tmp_path, "budget.value=4", "loop.eval_every=0", "model.hidden=32")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "model.hidden" in refused.stderr and "cannot change on resume" in refused.stderr
    assert (tmp_path / "run.json").read_text() == before  # nothing a user produced is touched


# ----------------------------------------------------------------------------- 2. forced resume
def test_forced_resume_refuses_the_learning_rate_and_records_what_it_applies(tmp_path):
    assert cli(tmp_path, fault="update@5").returncode == -9
    before = (tmp_path / "run.json").read_text()
    refused = cli(tmp_path, "optim.lr=0.05", "checkpoint.force_resume=true")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "optim.lr" in refused.stderr and "Traceback" not in refused.stderr
    assert (tmp_path / "run.json").read_text() == before
    # the checkpoint holds 4 updates: said without checkpoint.force_resume=true first (whose advice it was)
    behind = cli(tmp_path, "budget.value=2")
    assert behind.returncode == 2 and "gives 2 updates, but ckpt-" in behind.stderr, behind.stderr[-2000:]
    assert "force_resume=true to continue" not in behind.stderr
    assert (tmp_path / "run.json").read_text() == before
    level = cli(tmp_path, "budget.value=4", "checkpoint.force_resume=true")  # ended at once, recorded as 4's variant
    assert level.returncode == 2 and "already holds them all: no update would train" in level.stderr, level.stderr
    assert (tmp_path / "run.json").read_text() == before
    forced = cli(tmp_path, "budget.value=12", "checkpoint.force_resume=true")
    assert forced.returncode == 0, forced.stderr[-2000:]
    record = run_json(tmp_path)
    resume = record["resumes"][-1]
    assert any(d.startswith("budget.value") for d in resume["forced_despite"])
    assert resume["takes_effect_from_update"] == resume["from_update"] + 1 == 5
    assert record["updates_done"] == 12 and record["batch_plan"]["value"] == 12
    assert record["config_hash"] != resume["config_hash_before"]
    # the record names the config in force, the one before in the resume's entry (it said budget.value=10)
    assert "budget.value=12" in record["variant"] and "budget.value=10" in resume["variant_before"]
    assert record["overrides"][-2:] == ["budget.value=12", "checkpoint.force_resume=true"]
    from pilot.closing.close import write_reproduce  # (closing.control_examples=0 here: written by hand)

    reproduce = write_reproduce(tmp_path, record).read_text()
    assert "budget.value=12" in reproduce.split("```bash")[1].split("```")[0]
    assert "resumed under a changed config" in reproduce and "- updates 1-4: `python -m pilot" in reproduce


# ----------------------------------------------------------------------------- 3. signals
@pytest.mark.xdist_group("records_reference")  # its module fixture computed once, on one worker
@pytest.mark.parametrize(
    "signum, code",  # SIGHUP goes the same way (watched_signals, unit-tested below): the whole run is slow
    [
        (signal.SIGINT, 130),
        pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow),  # SIGTERM's exit code: the launcher tests
        pytest.param(signal.SIGHUP, 129, marks=pytest.mark.slow),
        # an examination: USR1 (a scheduler's warning, a user's kill -USR1) ended the run at once, run.json running;
        # the way SIGINT goes once watched (the default suite: test_the_user_signals_are_watched_where_...)
        pytest.param(signal.SIGUSR1, 138, marks=pytest.mark.slow),
    ],
)
def test_a_signal_ends_the_run_as_interrupted_and_it_resumes_bit_identically(tmp_path, reference, signum, code):
    if signal.getsignal(signum) == signal.SIG_IGN:  # inherited by the run (nohup): it ignores it, rightly
        pytest.skip(f"{signal.Signals(signum).name} is ignored in this process (nohup)")
    process = cli(tmp_path, "run.log_every=1", wait=False)
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3):
        time.sleep(0.02)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr[-2000:]
    record = run_json(tmp_path)
    stopped_at = record["interrupted_by"][-1]["at_update"]
    assert record["status"] == "interrupted" and signal.Signals(signum).name in record["stop_cause"]
    assert f"at update {stopped_at}" in record["stop_cause"] and 3 <= stopped_at < 10
    assert list_checkpoints(tmp_path / "checkpoints")[0][0] == stopped_at  # a complete checkpoint there
    resumed = cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert run_json(tmp_path)["status"] == "ok"
    assert_same_run(tmp_path, reference)


def test_a_signal_during_the_last_update_leaves_a_complete_run_ok_too(tmp_path):
    """A signal that came during the last update (its metrics row written) ended the run 'interrupted' at that
    update, its final validation and closing left to a resume; a moment later it was 'ok' (an examination)."""
    last = int(dict(a.split("=", 1) for a in TRAIN if a.startswith("budget.value="))["budget.value"])
    done = cli(tmp_path, "closing.control_examples=4", fault=f"update:SIGTERM@{last}")
    assert done.returncode == 143, done.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["closing"]["verdict"] == "pass" and record["updates_done"] == last
    assert record["signal_after_budget"]["signal"] == "SIGTERM" and not record.get("interrupted_by"), record
    assert "the signal came during the last update" in done.stdout + done.stderr


def test_a_signal_after_the_last_update_leaves_a_complete_run_ok_and_stops_the_process(tmp_path):
    done = cli(tmp_path, "closing.control_examples=4", fault="closing:SIGINT")  # Ctrl-C as the closing starts
    assert done.returncode == 130, done.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["closing"]["verdict"] == "pass"  # both ran to their end
    assert record["signal_after_budget"]["signal"] == "SIGINT" and not record.get("interrupted_by")
    said = done.stdout + done.stderr  # what the log says is what happens: no update left to finish or save
    assert "received after the last update: the final validation and the closing run to their end" in said
    assert "finishing this update" not in said


def test_signals_while_the_record_is_written_are_noted_never_raised():
    """A second Ctrl-C used to raise inside close() and leave run.json saying running."""
    watch = InterruptWatch().install()
    try:
        watch.defer()
        for _ in range(3):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.02)
        assert watch.noted == "SIGINT" and watch.received is None
    finally:
        watch.uninstall()
    assert signal.getsignal(signal.SIGINT) is not watch._flag
    with pytest.raises(SystemExit) as stop:  # the record written, the signal still stops the process
        watch.stop_if_noted()
    assert stop.value.code == 130


def test_sighup_is_watched_unless_it_is_ignored():
    previous = signal.getsignal(signal.SIGHUP)
    try:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        assert signal.SIGHUP in watched_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup: the user asked to outlive the terminal
        assert signal.SIGHUP not in watched_signals() and signal.SIGINT in watched_signals()
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_user_signals_are_watched_where_nothing_else_handles_them(monkeypatch):
    """Their default action kills the process without a record; a handler already there (the caller's) is kept,
    and in a submitit or SLURM job SIGUSR2 is the preemption's."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGUSR1, signal.SIGUSR2)}
    for name in ("SUBMITIT_EXECUTOR", "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    try:
        for signum in previous:
            signal.signal(signum, signal.SIG_DFL)
        assert {signal.SIGUSR1, signal.SIGUSR2} <= set(watched_signals())
        monkeypatch.setenv("SLURM_JOB_ID", "7")
        assert signal.SIGUSR2 not in watched_signals() and signal.SIGUSR1 in watched_signals()
        signal.signal(signal.SIGUSR1, lambda *_: None)  # someone else's handler: left alone
        assert signal.SIGUSR1 not in watched_signals()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# ----------------------------------------------------------------------------- 4. non-finite checkpoints
@pytest.mark.xdist_group("records_reference")  # its module fixture computed once, on one worker
def test_a_diverged_run_saves_no_non_finite_checkpoint_and_stays_diverged(tmp_path, reference):
    # NaN weights after update 3 while its loss was finite (an optimizer overflow, say)
    done = cli(tmp_path, "checkpoint.every=1", fault="nan_weights@3")
    assert done.returncode == 1, done.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "diverged" and "non-finite values" in record["stop_cause"]
    assert [u for u, _ in list_checkpoints(tmp_path / "checkpoints")] == [2, 1]  # never the NaN state
    before = {name: (tmp_path / name).read_bytes() for name in ("run.json", "metrics.jsonl")}
    again = cli(tmp_path, "checkpoint.every=1")
    assert again.returncode == 1 and "stays diverged" in again.stderr and "Traceback" not in again.stderr
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    continued = cli(tmp_path, "checkpoint.every=1", "checkpoint.continue_diverged=true")
    assert continued.returncode == 0, continued.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["resumes"][-1]["previous_status"] == "diverged"
    assert record["resumes"][-1]["from_update"] == 2
    assert record["resumes"][-1]["previous_finished_at"] <= record["resumes"][-1]["at"]  # the time it stood stopped
    assert_same_run(tmp_path, reference)  # continued from the last finite state: the uninterrupted run


def test_a_legacy_non_finite_checkpoint_is_skipped(make_cfg, tmp_path):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    trainer.train_step()
    Checkpointer(tmp_path, cfg).save(trainer)
    trainer.train_step()
    state = training_state(trainer, cfg)
    state["model"] = {k: torch.full_like(v, float("nan")) for k, v in state["model"].items()}
    torch.save(state, tmp_path / "ckpt-00000002.pt")
    path, loaded = latest_valid_checkpoint(tmp_path)
    assert path.name == "ckpt-00000001.pt"
    next(iter(trainer.raw_model.parameters())).data.fill_(float("nan"))
    with pytest.raises(ValueError, match="non-finite"):
        Checkpointer(tmp_path, cfg).save(trainer)


# ----------------------------------------------------------------------------- 5. validation rows
@pytest.mark.xdist_group("records_reference")  # its module fixture computed once, on one worker
@pytest.mark.parametrize(
    "fault", ["update@4", pytest.param("before_rename@8", marks=pytest.mark.slow)]
)  # validation at 4 and 8
def test_validation_rows_once_after_any_kill(tmp_path, reference, fault):
    killed = cli(tmp_path, fault=fault)
    assert killed.returncode == -9, killed.stderr[-1000:]
    resumed = cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_run(tmp_path, reference)
    before = {name: (tmp_path / name).read_bytes() for name in ("run.json", "metrics.jsonl")}
    again = cli(tmp_path)  # a finished run started again: says so, touches nothing
    assert again.returncode == 0 and "finished run" in again.stderr
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_a_kill_during_closing_redoes_the_closing_once(tmp_path):
    args = [a for a in TRAIN if not a.startswith("closing.")] + ["closing.control_examples=2"]
    assert cli(tmp_path, fault="closing@10", train_args=args).returncode == -9
    resumed = cli(tmp_path, train_args=args)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["closing"]["verdict"] == "pass"
    assert metric_rows(tmp_path, "val") == [4, 8, 10]
    # the final update's checkpoint was a periodic one (checkpoint.every=2): phases.csv had no checkpoint_save
    # row; each attempt now says where it was saved (the second: by the first), with that save's own time
    saves = [r for r in read_phases_csv(tmp_path / "phases.csv") if r["phase"] == "checkpoint_save"]
    assert [(r["attempt"], r["verdict"]) for r in saves] == [(1, "skipped"), (2, "skipped")], saves
    assert "saved after update 10 as the periodic checkpoint, in " in saves[0]["detail"]
    assert "ckpt-00000010.pt" in saves[1]["detail"] and "saved by an earlier attempt" in saves[1]["detail"]


def test_a_reload_process_killed_mid_check_leaves_the_closing_incomplete_never_failed(tmp_path):
    """kill -9 of the closing's reload process (the out-of-memory killer): the run trained to its end
    (ok, exit 0); its closing checked nothing and says so: ``incomplete``, with the command that redoes it."""
    args = [a for a in TRAIN if not a.startswith("closing.")] + ["closing.control_examples=2"]
    done = cli(tmp_path, fault="reload", train_args=args)
    assert done.returncode == 0, done.stderr[-2000:]
    record = run_json(tmp_path)
    closing = record["closing"]
    assert record["status"] == "ok" and closing["verdict"] == "incomplete", closing
    assert (
        "killed by SIGKILL before it answered" in closing["reason"] and "python -m pilot.closing" in closing["reason"]
    )


def test_the_closing_redone_by_hand_updates_the_runs_record_and_keeps_the_earlier_verdict(tmp_path):
    """The incomplete closing names ``python -m pilot.closing <run>/export`` to redo it; run by hand, that
    check passed while run.json went on saying ``incomplete``. Now the record takes the new verdict, the
    earlier one kept beside it; a run's own check (its process holds the directory) leaves the record alone."""
    args = [a for a in TRAIN if not a.startswith("closing.")] + ["closing.control_examples=2"]
    assert cli(tmp_path, fault="reload", train_args=args).returncode == 0
    held = RunDirectoryLock(tmp_path).acquire()  # the run's own process, checking: not recorded here
    try:
        assert closing_main([str(tmp_path / "export")]) == 0
    finally:
        held.release()
    assert run_json(tmp_path)["closing"]["verdict"] == "incomplete"
    assert closing_main([str(tmp_path / "export")]) == 0  # by hand
    closing = run_json(tmp_path)["closing"]
    assert closing["verdict"] == "pass" and closing["redone"]["earlier"]["verdict"] == "incomplete", closing
    assert closing["weights"]["file"] == "export/model.safetensors"
    # the killed reload's output went with the verdict that replaced it (it stayed beside a passing one); redone
    # again, the run's own incomplete closing is still in the record (it was replaced by 'earlier: pass')
    assert not (tmp_path / "export" / "reload_check.error.txt").exists()
    assert closing_main([str(tmp_path / "export")]) == 0
    redone = run_json(tmp_path)["closing"]["redone"]
    assert redone["earlier"]["verdict"] == "pass" and redone["earlier"]["redone"]["earlier"]["verdict"] == "incomplete"


def test_a_closing_stopped_by_a_signal_is_incomplete_and_by_hand_says_so_in_one_line(tmp_path):
    """The run's own reload check stopped by SIGTERM leaves the closing ``incomplete``; redone by hand and
    stopped by Ctrl-C it printed a KeyboardInterrupt traceback, by SIGTERM it ended silently (-15): now one
    line and 128 + the signal, and the run's record keeps its verdict."""
    args = [a for a in TRAIN if not a.startswith("closing.")] + ["closing.control_examples=2"]
    assert cli(tmp_path, fault="reload:SIGTERM", train_args=args).returncode == 0
    assert run_json(tmp_path)["closing"]["verdict"] == "incomplete"
    for name in ("SIGINT", "SIGTERM"):
        env = {**os.environ, "PILOT_FAULT": f"reload:{name}"}
        command = [sys.executable, "-m", "pilot.closing", str(tmp_path / "export")]
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 128 + getattr(signal, name), (done.returncode, done.stderr)
        assert "Traceback" not in done.stderr and f"stopped ({name})" in done.stderr, done.stderr
        assert run_json(tmp_path)["closing"]["verdict"] == "incomplete"


def test_a_pilot_whose_resume_process_is_killed_is_incomplete_and_exits_one(tmp_path):
    """The pilot cannot vouch for a resume it did not see: verdict ``incomplete`` (not pass, not fail), exit 1."""
    done = run_pilot(tmp_path, "+experiment=classification", fault="resume")
    assert done.returncode == 1, done.stderr[-2000:]
    record = run_json(tmp_path)
    assert record["verdicts"]["phases"] == "incomplete", record["verdicts"]
    assert "resume_check" in record["stop_cause"] and "pilot verdict: incomplete" in done.stdout
    assert "killed by SIGKILL before it answered" in (tmp_path / "report.md").read_text()
    # the default threads: the cores shared with the checks' process that works beside the pilot
    assert "/ 1 replica(s), less 1 for the pilot's checks process beside it" in record["threads"]["reason"]


# ----------------------------------------------------------------------------- 6. damaged checkpoints
def test_a_zero_byte_newest_checkpoint_falls_back(make_cfg, tmp_path, caplog):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    trainer.train_step()
    Checkpointer(tmp_path, cfg).save(trainer)
    (tmp_path / "ckpt-00000002.pt").write_bytes(b"")
    path, _ = latest_valid_checkpoint(tmp_path)
    assert path.name == "ckpt-00000001.pt" and "ckpt-00000002.pt is unreadable" in caplog.text


def test_a_truncated_newest_checkpoint_is_named_in_whole_sentences(make_cfg, tmp_path):
    """torch's zip reader says why in a 300-character line; the record cut it at 200 characters, mid-sentence
    ('... If you are seeing this error,'). It now ends at the last whole sentence."""
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    trainer.train_step()
    Checkpointer(tmp_path, cfg).save(trainer)
    newest = tmp_path / "ckpt-00000002.pt"
    newest.write_bytes((tmp_path / "ckpt-00000001.pt").read_bytes()[:1000])
    skipped: list[str] = []
    path, _ = latest_valid_checkpoint(tmp_path, skipped)
    assert path.name == "ckpt-00000001.pt" and len(skipped) == 1 and skipped[0].startswith("ckpt-00000002.pt: ")
    assert skipped[0].endswith("."), skipped[0]


def test_a_temporary_file_that_cannot_be_removed_is_left_with_a_warning(tmp_path, monkeypatch, caplog):
    (tmp_path / "ckpt-00000004.pt.tmp-123").write_bytes(b"partial")
    monkeypatch.setattr(
        Path,
        "unlink",
        lambda self, missing_ok=False: (_ for _ in ()).throw(PermissionError(errno.EROFS, "Read-only file system")),
    )
    assert clean_temporary_files(tmp_path) == []
    assert "left in place" in caplog.text


# ----------------------------------------------------------------------------- 7. disk full
def _tiny_tmpfs(path: Path, size: str):
    path.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here; the CLI test injects ENOSPC instead")


def test_a_disk_full_message_never_contradicts_its_own_sizes(tmp_path):
    """It said "about 8,192 bytes needed, 8,192 bytes free" (the file system keeps blocks of its own), and
    "earlier checkpoints and records are intact" where none existed."""
    from pilot.errors import _disk_full

    free = shutil.disk_usage(tmp_path).free
    fits = str(_disk_full(tmp_path / "file", 4096))
    assert "bytes needed" not in fits and "bytes free now" in fits and "any earlier checkpoint" in fits
    short = str(_disk_full(tmp_path / "file", free * 2))
    assert f"about {free * 2:,} bytes needed" in short and "from update 0 where none was saved" in short


def test_disk_full_during_a_real_checkpoint_save_keeps_the_previous_one(make_cfg, tmp_path):
    cfg = make_cfg("model=tiny_gpt")
    trainer = build_trainer(cfg)
    trainer.train_step()
    directory = tmp_path / "small"
    _tiny_tmpfs(directory, "256k")
    try:
        (directory / "ckpt-00000000.pt").write_bytes(b"an earlier checkpoint")
        with pytest.raises(DiskFull, match=r"no space left .*ckpt-00000001\.pt.*bytes needed"):
            Checkpointer(directory, cfg).save(trainer)
        assert sorted(p.name for p in directory.iterdir()) == ["ckpt-00000000.pt"]  # no temporary file left
    finally:
        subprocess.run(["umount", str(directory)], check=False)


@pytest.mark.xdist_group("records_reference")  # its module fixture computed once, on one worker
def test_disk_full_through_the_cli_is_one_message_and_a_failed_record(tmp_path, reference):
    full = cli(tmp_path, fault="enospc@6")
    assert full.returncode == 2, full.stderr[-2000:]
    assert "Traceback" not in full.stderr and full.stderr.count("no space left") == 1
    assert "ckpt-00000006.pt" in full.stderr
    record = run_json(tmp_path)
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full"
    assert [u for u, _ in list_checkpoints(tmp_path / "checkpoints")][0] == 4
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if ".tmp-" in p.name]
    resumed = cli(tmp_path)  # space freed: the run resumes
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_run(tmp_path, reference)


@pytest.mark.xdist_group("records_reference")
def test_a_refused_write_through_the_cli_is_one_message_naming_the_file_and_the_run_resumes(tmp_path, reference):
    denied = cli(tmp_path, fault="eperm@6")  # an immutable checkpoints/ (chattr +i), a read-only mount
    assert denied.returncode == 2, denied.stderr[-2000:]
    assert "Traceback" not in denied.stderr, denied.stderr[-2000:]
    said = denied.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("pilot: the system refused access to ")
    assert "ckpt-00000006.pt" in said[0] and "EPERM" in said[0] and "resumes from its newest valid" in said[0]
    record = run_json(tmp_path)
    assert record["status"] == "failed" and "PermissionError" in record["error"]
    assert "run.json says where the run stopped" in said[0]  # it does
    assert [u for u, _ in list_checkpoints(tmp_path / "checkpoints")][0] == 4
    resumed = cli(tmp_path)  # access given back: the run resumes
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_run(tmp_path, reference)


def test_disk_full_writing_phases_csv_is_recorded(make_cfg, tmp_path, monkeypatch):
    cfg = make_cfg(
        *[a for a in TRAIN if not a.startswith(("mode", "+experiment"))], "+experiment=classification", "budget.value=2"
    )

    class FullDisk:  # phases.csv's writer: its rows do not fit
        def __init__(self, handle, **kwargs):
            pass

        def writerow(self, row):
            pass

        def writerows(self, rows):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(phase_rows.csv, "writer", FullDisk)
    with pytest.raises(DiskFull, match="phases.csv"):
        train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full"


def test_disk_full_writing_the_export_is_recorded_and_the_same_command_closes_the_run(make_cfg, tmp_path):
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith(("mode", "closing"))], "budget.value=2")
    _tiny_tmpfs(tmp_path / "export", "16k")  # the export's weights (~0.5 MB) do not fit: a real ENOSPC
    try:
        with pytest.raises(DiskFull, match=r"no space left on the device writing .*export/model\.safetensors"):
            train(cfg, tmp_path)
        record = run_json(tmp_path)
        assert record["status"] == "failed" and record["stop_cause"] == "disk_full"
        assert "export/model.safetensors" in record["error"]
        assert list((tmp_path / "export").iterdir()) == []  # its temporary file removed: the space is back
    finally:
        subprocess.run(["umount", str(tmp_path / "export")], check=False)
    train(cfg, tmp_path)  # space freed: the same command closes the run it had trained
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["closing"]["verdict"] == "pass", record
    assert record["resumes"][-1]["previous_stop_cause"] == "disk_full"


def test_disk_full_appending_to_metrics_jsonl_is_recorded(make_cfg, tmp_path, monkeypatch):
    import pilot.metrics_file as metrics_file

    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6")
    real, lines = metrics_file._append, []

    def full_at_the_fourth(fd, data):
        lines.append(data)
        if len(lines) == 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(metrics_file, "_append", full_at_the_fourth)
    with pytest.raises(DiskFull, match=r"writing .*metrics\.jsonl"):
        train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full" and "metrics.jsonl" in record["error"]


def test_a_pilot_on_a_full_disk_ends_with_one_message_and_no_traceback(tmp_path):
    _tiny_tmpfs(tmp_path / "small", "2500k")  # a pilot's files take ~5 MB: a phase (export, resume) cannot write
    try:
        pilot = run_pilot(tmp_path / "small" / "p")
        record = json.loads((tmp_path / "small" / "p" / "run.json").read_text())
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    output = pilot.stdout + pilot.stderr
    assert pilot.returncode == 2 and "Traceback" not in output, output[-3000:]  # the disk failed, not the task
    assert (
        "pilot: no space left on the device writing" in pilot.stderr
        and "a pilot or an estimate starts afresh" in pilot.stderr
    )
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full", record
    # stopped at the first file that did not fit: no verdict, no report claiming failed checks
    assert "pilot verdict" not in output and not (tmp_path / "small" / "p" / "report.md").exists(), output[-3000:]
    assert "verdicts" not in record


def test_a_disk_that_fills_up_during_training_is_blamed_on_the_first_file_that_did_not_fit(tmp_path):
    _tiny_tmpfs(tmp_path / "small", "64k")  # metrics.jsonl fills it; then nothing else fits
    try:
        full = cli(tmp_path / "small" / "t", "budget.value=300", "checkpoint.every=0", "loop.eval_every=0")
        record = run_json(tmp_path / "small" / "t")
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-3000:]
    assert "no space left on the device writing" in full.stderr and "metrics.jsonl" in full.stderr
    # run.json's room, kept since it was opened, holds its last word: it said "running" before
    assert "could not record" not in full.stderr, full.stderr[-3000:]
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full", record
    assert "metrics.jsonl" in record["error"]


def test_no_room_for_hydras_own_files_is_one_message_and_leaves_no_directory(tmp_path):
    _tiny_tmpfs(tmp_path / "small", "4k")  # Hydra's .hydra/config.yaml does not fit: Hydra fails, not the run
    try:
        full = run_pilot(tmp_path / "small" / "p")
        left = sorted(p.name for p in (tmp_path / "small").iterdir())
        sweep = subprocess.run(  # a sweep's multirun.yaml does not fit either
            [
                sys.executable,
                "-m",
                "pilot",
                "-m",
                "mode=train",
                "optim.lr=1e-3,2e-3",
                f"hydra.sweep.dir={tmp_path}/small/s",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    assert full.returncode == 2 and "Traceback" not in full.stdout + full.stderr, full.stderr[-3000:]
    assert f"pilot: no space left on the device writing {tmp_path / 'small' / 'p' / '.hydra'}" in full.stderr
    assert left == []  # the directory made for this line held only Hydra's partial files: removed
    assert sweep.returncode == 2 and "Traceback" not in sweep.stderr, sweep.stderr[-3000:]
    assert f"pilot: no space left on the device writing {tmp_path / 'small' / 's'}" in sweep.stderr


def test_hydra_files_rewritten_on_a_full_disk_are_put_back_as_the_run_had_them(tmp_path):
    _tiny_tmpfs(tmp_path / "small", "1m")
    run = tmp_path / "small" / "t"
    longer = "+hydra.job.env_set.PILOT_NOTE=" + "x" * 6000  # this line's hydra.yaml cannot fit
    try:
        failed = run_pilot(run, "mode=train", "budget.value=4", "checkpoint.every=0", fault="exception@2")
        assert failed.returncode != 0 and json.loads((run / "run.json").read_text())["status"] == "failed"
        before = {p.name: p.read_bytes() for p in (run / ".hydra").iterdir()}
        with open(tmp_path / "small" / "filler", "wb", buffering=0) as filler:  # the disk is full now
            with pytest.raises(OSError):
                while True:
                    filler.write(b"0" * 4096)
        again = run_pilot(run, "mode=train", "budget.value=4", "checkpoint.every=0", longer)
        after = {p.name: p.read_bytes() for p in (run / ".hydra").iterdir()}
        record = json.loads((run / "run.json").read_text())
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr[-3000:]
    assert "pilot: no space left on the device writing" in again.stderr and "could not be put back" not in again.stderr
    assert after == before and record["status"] == "failed"  # Hydra's truncated files: back as they were


def test_an_estimate_on_a_full_disk_ends_with_one_message_naming_the_file(tmp_path):
    _tiny_tmpfs(tmp_path / "small", "40k")  # the choice sheet's files do not fit
    try:
        estimate = run_pilot(tmp_path / "small" / "e", "mode=estimate")
        record = run_json(tmp_path / "small" / "e")
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    assert estimate.returncode == 2 and "Traceback" not in estimate.stdout + estimate.stderr, estimate.stderr[-3000:]
    assert "pilot: no space left on the device writing " in estimate.stderr
    assert "could not record" not in estimate.stderr, estimate.stderr[-3000:]  # run.json's room holds its last word
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full", record  # "running" before


def test_run_jsons_last_write_goes_into_its_room_or_leaves_the_record_as_it_was(tmp_path):
    """The room kept for run.json's last write (pilot.record_room): written over its own blocks and renamed
    over run.json; too small for the text, the room is given back and run.json is untouched."""
    from pilot.record_room import keep_room, write_in_room

    record = tmp_path / "run.json"
    record.write_text('{"status": "running"}')
    room = keep_room(tmp_path, record.stat().st_size)
    assert room is not None and room.stat().st_size >= 16 * 1024
    assert not write_in_room(room, record, "x" * (room.stat().st_size + 1))  # larger than the room
    assert not room.exists() and record.read_text() == '{"status": "running"}'
    room = keep_room(tmp_path, record.stat().st_size)
    assert write_in_room(room, record, '{"status": "failed"}')
    assert record.read_text() == '{"status": "failed"}' and sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


ESTIMATE_FILES = ["choice_sheet.md", "choice_sheet.csv", "campaign_plan.csv", "memory_estimate.json"]


def _fill_up(directory: Path) -> None:
    """Another process's file takes every byte left on ``directory``'s file system."""
    with open(directory / "filler", "wb", buffering=0) as filler:
        with pytest.raises(OSError):
            while True:
                filler.write(b"0" * 4096)


@pytest.mark.parametrize("filled_before", ESTIMATE_FILES)
def test_an_estimate_whose_disk_fills_up_records_failed_and_keeps_what_it_wrote(
    make_cfg, tmp_path, monkeypatch, filled_before
):
    """The disk filled up by another process (0 bytes free) before memory_estimate.json: run.json said
    ``running`` beside a complete choice sheet (its own temporary copy did not fit). Whichever file meets
    the full disk, the record says failed/disk_full naming it, and what was written stays as it was."""
    from pilot.estimate_run import run_estimate
    from pilot.rental import sheet

    reference = tmp_path / "reference"
    assert run_estimate(make_cfg("mode=estimate"), reference) == 0
    small = tmp_path / "small"
    _tiny_tmpfs(small, "1m")
    written = sheet.write_text_atomic

    def fills_up_first(path, text):
        if path.name == filled_before:
            _fill_up(small)
        written(path, text)

    monkeypatch.setattr(sheet, "write_text_atomic", fills_up_first)
    try:
        with pytest.raises(DiskFull) as full:
            run_estimate(make_cfg("mode=estimate"), small / "e")
        record = run_json(small / "e")
        kept = {p.name: p.read_bytes() for p in (small / "e").iterdir() if p.name in ESTIMATE_FILES}
        left = sorted(p.name for p in (small / "e").iterdir())
    finally:
        subprocess.run(["umount", str(small)], check=False)
    assert f"no space left on the device writing {small / 'e' / filled_before}" in str(full.value)
    assert "could not record" not in str(full.value), str(full.value)
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full", record
    assert filled_before in record["error"] and record.get("finished_at"), record
    before = ESTIMATE_FILES[: ESTIMATE_FILES.index(filled_before)]
    assert sorted(kept) == sorted(before)  # nothing written lost, nothing half written
    assert not [name for name in left if name.endswith(".tmp") or name == ".run.json.room"], left
    for name in ("choice_sheet.csv", "campaign_plan.csv"):  # no path of the run inside: the same bytes
        assert name not in kept or kept[name] == (reference / name).read_bytes()


# ----------------------------------------------------------------------------- 8. one process per run directory
def test_a_second_process_on_a_run_directory_is_refused(tmp_path):
    with RunDirectoryLock(tmp_path):
        with pytest.raises(RunDirectoryBusy, match=f"pid {os.getpid()}"):
            RunDirectoryLock(tmp_path).acquire()
        refused = cli(tmp_path)
        assert refused.returncode == 2 and f"pid {os.getpid()} on host" in refused.stderr
        assert "Traceback" not in refused.stderr and not (tmp_path / "run.json").exists()
    RunDirectoryLock(tmp_path).acquire().release()  # free again once the holder let go


def test_no_space_for_the_lock_file_is_one_message_and_leaves_the_directory_free(tmp_path, monkeypatch):
    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "write", no_space)
        with pytest.raises(DiskFull, match=r"\.pilot\.lock"):
            RunDirectoryLock(tmp_path).acquire()
    RunDirectoryLock(tmp_path).acquire().release()  # the failed attempt holds no lock


def test_a_signalled_pilot_is_recorded_as_interrupted_and_its_directory_never_reused(tmp_path):
    process = cli(tmp_path, train_args=["run.threads=1"], wait=False)  # the pilot on the default task
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp_path / "run.json").exists():
        time.sleep(0.05)
    time.sleep(1.0)  # inside the pilot's steps
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr[-2000:]
    record = run_json(tmp_path)
    assert record["status"] == "interrupted" and "SIGTERM" in record["stop_cause"]
    before = (tmp_path / "run.json").read_text()
    again = cli(tmp_path, train_args=["run.threads=1"])
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert (tmp_path / "run.json").read_text() == before


def test_a_signalled_estimate_is_recorded_as_interrupted_not_running(tmp_path):
    seven_b = [
        "model.d_model=4096",
        "model.n_layer=32",
        "model.n_head=32",
        "model.vocab_size=32000",
        "data.max_len=2048",
    ]
    command = [
        sys.executable,
        "-m",
        "pilot",
        "mode=estimate",
        "run.threads=1",
        *seven_b,
        f"hydra.run.dir={tmp_path / 'e'}",
    ]
    env = {
        **os.environ,
        "PILOT_ESTIMATE_CACHE": str(tmp_path / "store"),
    }  # nothing stored: it computes for 10 s or more
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp_path / "e" / "run.json").exists():
        time.sleep(0.05)
    time.sleep(1.0)  # inside the estimate
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr[-2000:]
    record = run_json(tmp_path / "e")  # it said "running" before: a record of a run that had ended
    assert record["status"] == "interrupted" and "SIGTERM during the estimate" in record["stop_cause"], record


def test_a_garbage_run_json_in_the_run_directory_is_named_and_kept(tmp_path):
    (tmp_path / "run.json").write_text("{ not json")
    refused = cli(tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"{tmp_path / 'run.json'} is unreadable" in refused.stderr
    assert (tmp_path / "run.json").read_text() == "{ not json"  # nothing a user produced is lost


def test_metrics_lines_lead_with_the_keys_the_recap_fast_path_reads():
    """run_record owns the metrics.jsonl line format: whatever order a row was built in, the line
    starts kind, update, loss, which is what the recap's one-regex reader matches."""
    from pilot.metrics_reading import KIND_ROW, _as_written
    from pilot.run_record import metrics_line

    line = metrics_line({"loss": 2.5, "lr": 0.1, "update": 3, "kind": "train"})
    assert line == '{"kind": "train", "update": 3, "loss": 2.5, "lr": 0.1}'
    assert _as_written(line + "\n") and KIND_ROW["train"].match(line).groups() == ("3", "2.5")
    assert not _as_written('{"update": 3, "kind": "train", "loss": 2.5}\n')  # another order: slow path
    assert not _as_written(line + line + "\n")  # two records on one line: slow path


def test_a_validation_subset_larger_than_the_split_is_recorded_as_what_it_evaluates(make_cfg, tmp_path, caplog):
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=2", "loop.eval_examples=100000")
    train(cfg, tmp_path)
    record = run_json(tmp_path)
    used = record["batch_plan"]["eval_examples"]
    assert 0 < used < 100000 and record["status"] == "ok"
    assert f"loop.eval_examples=100000 but the validation split holds {used}" in caplog.text
    # the default warm-up (10 updates) is longer than these 2: the peak learning rate is never used
    assert record["batch_plan"]["peak_lr_reached"] == pytest.approx(cfg.optim.lr * 2 / 10)
    assert "optim.warmup_updates=10 is longer than the run's 2 updates" in caplog.text


def test_a_signal_after_the_lock_and_before_the_record_is_one_line_and_an_honest_record(tmp_path):
    """Ctrl-C between taking the directory lock and opening run.json ended in a FileNotFoundError traceback
    (a new run), or left a resumed run 'running' with the exit code of its earlier ending."""
    fresh = run_pilot(tmp_path / "fresh", *TRAIN, "budget.value=4", fault="setup:SIGINT")
    said = fresh.stdout + fresh.stderr
    assert fresh.returncode == 130 and "stopped before the run began" in said, said[-3000:]
    assert "Traceback" not in said and not (tmp_path / "fresh").exists()  # the directory made for it goes too
    run = tmp_path / "resumed"
    failed = run_pilot(run, *TRAIN, "budget.value=4", "checkpoint.every=2", fault="exception@3")
    assert failed.returncode != 0 and json.loads((run / "run.json").read_text())["status"] == "failed"
    early = run_pilot(run, *TRAIN, "budget.value=4", "checkpoint.every=2", fault="lock:SIGINT")  # before the lock:
    said = early.stdout + early.stderr  # 'that checkpoint is kept; nothing to resume' (an examination)
    assert early.returncode == 130 and "resume with the same command" in said and "nothing to resume" not in said
    stopped = run_pilot(run, *TRAIN, "budget.value=4", "checkpoint.every=2", fault="setup:SIGINT")
    assert stopped.returncode == 130 and "Traceback" not in stopped.stdout + stopped.stderr, stopped.stderr[-3000:]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "interrupted" and record["interrupted_by"][-1]["at_update"] == 2, record
    done = run_pilot(run, *TRAIN, "budget.value=4", "checkpoint.every=2")
    assert done.returncode == 0 and json.loads((run / "run.json").read_text())["status"] == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("size", ["8k", "24k"])  # multirun.yaml does not fit; a job's .hydra/ does not
def test_a_sweep_whose_hydra_files_do_not_fit_leaves_nothing_a_recap_counts(tmp_path, size):
    """The job's directory (Hydra's files, no run.json) stayed and a recap counted it as an unreadable
    run; the message named the sweep directory, not the file."""
    _tiny_tmpfs(tmp_path / "small", size)
    sweep = tmp_path / "small" / "s"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pilot", "-m", *TRAIN, "budget.value=3", "seed=0,1", f"hydra.sweep.dir={sweep}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        left = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "small").rglob("*"))
    finally:
        subprocess.run(["umount", str(tmp_path / "small")], check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"pilot: no space left on the device writing {sweep}/" in done.stderr
    assert ("multirun.yaml" if size == "8k" else "/.hydra") in done.stderr.split("writing ", 1)[1].split(":")[0]
    assert left == [], left  # the sweep directory made for this line, and its job's, are gone


def _wait_for_updates(run_dir: Path, count: int, process, deadline_s: float = 180) -> None:
    deadline = time.monotonic() + deadline_s
    metrics = Path(run_dir) / "metrics.jsonl"
    while time.monotonic() < deadline and process.poll() is None:
        if metrics.exists() and metrics.read_text().count('"kind": "train"') >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count} updates in {run_dir}")


@pytest.mark.parametrize("signals", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_sigterm_to_the_launcher_of_replicas_alone_stops_them_and_is_recorded(tmp_path, signals):
    """A SIGTERM sent to the launching process of 2 DDP replicas (not its process group) was acknowledged
    there and reached no replica: they trained to the end and recorded ok; two of them exited 130 saying
    SIGINT while the replicas trained on, detached."""
    run_dir = tmp_path / "run"
    process = cli(run_dir, "distributed=ddp2", "budget.value=100000", wait=False)
    _wait_for_updates(run_dir, 3, process)
    for _ in range(signals):
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    _, err = process.communicate(timeout=240)
    assert process.returncode == 143 and "Traceback" not in err, err[-3000:]
    record = run_json(run_dir)
    assert record["status"] == "interrupted" and record["stop_cause"].startswith("interrupted: SIGTERM at update")
    assert [entry["signal"] for entry in record["interrupted_by"]] == ["SIGTERM"]
    assert "nothing to resume" not in err and "resume with the same command" in err  # rank 1 has no record of its own


def test_a_killed_launcher_is_recorded_as_such_not_as_a_typed_ctrl_c(tmp_path):
    """kill -9 of the launcher: torch sends its replicas SIGINT, recorded as if someone had pressed Ctrl-C."""
    run_dir = tmp_path / "run"
    process = cli(run_dir, "distributed=ddp2", "budget.value=100000", wait=False)
    _wait_for_updates(run_dir, 3, process)
    process.kill()
    process.communicate(timeout=60)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run_json(run_dir)["status"] == "running":
        time.sleep(0.1)
    record = run_json(run_dir)
    assert record["status"] == "interrupted", record["stop_cause"]
    assert "sent by no one: the launching process" in record["stop_cause"], record["stop_cause"]
    assert record["interrupted_by"][-1]["sent_by"].startswith("no one: the launching process")


def test_disk_full_writing_the_predictions_names_the_file_and_leaves_no_empty_one(make_cfg, tmp_path, monkeypatch):
    """No space while predictions.jsonl is written (after the final validation): the message named no file,
    and an empty predictions.jsonl was left as if the run had predicted nothing."""
    import pilot.predictions as predictions

    def no_space(trainer, task, model, items, step, handle):
        handle.write('{"index": 0}\n')
        raise OSError(errno.ENOSPC, "No space left on device")  # a flush: no filename on the error

    monkeypatch.setattr(predictions, "_write_lines", no_space)
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=2")
    with pytest.raises(DiskFull, match=r"no space left on the device writing .*predictions\.jsonl"):
        train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == "failed" and record["stop_cause"] == "disk_full"
    assert "predictions.jsonl" in record["error"]
    assert not (tmp_path / "predictions.jsonl").exists() and not list(tmp_path.glob(".predictions*"))


def test_a_pilot_stopped_after_its_choice_sheet_before_its_verdicts_leaves_no_sheet(tmp_path):
    """Ctrl-C once the estimate step had written the choice sheet: run.json said interrupted, no verdict,
    while choice_sheet.md said "The config runs as planned as it is" beside a campaign plan; the README
    promises no choice sheet. The sheet's files are taken away with the signal's record."""
    done = cli(tmp_path, fault="sheet:SIGINT", train_args=["run.threads=1"])
    assert done.returncode == 130, done.stderr[-3000:]
    record = run_json(tmp_path)
    assert record["status"] == "interrupted" and not record.get("verdicts"), record
    left = ["choice_sheet.md", "choice_sheet.csv", "campaign_plan.csv", "memory_estimate.json"]
    assert not [name for name in left if (tmp_path / name).exists()], sorted(p.name for p in tmp_path.iterdir())
    said = done.stdout + done.stderr
    assert "choice_sheet.md" in said and "removed (written before the signal" in said, said[-2000:]


def test_a_signal_once_the_pilots_verdicts_are_final_keeps_them_in_the_record(tmp_path):
    """SIGTERM while the verdicts were being written: report.md said 'verdict pass' and the choice sheet was
    there, while run.json said 'interrupted during the pilot (no verdict)' and held no verdicts. The report and
    the record are finished first; the record names the signal, and the process still exits 143."""
    done = cli(tmp_path, fault="verdicts:SIGTERM", train_args=["run.threads=1"])
    assert done.returncode == 143, done.stderr[-3000:]
    record = run_json(tmp_path)
    assert record["status"] == "ok" and record["verdicts"]["inspect"] == "pass", record.get("stop_cause")
    assert record["signal_after_verdicts"]["signal"] == "SIGTERM"
    assert "verdict **pass**" in (tmp_path / "report.md").read_text()


def test_a_second_signal_while_a_checkpoint_is_saved_says_which_update_has_none(make_cfg, tmp_path, monkeypatch):
    """Stopped at once while update 4's checkpoint was being written: the record said 'without a checkpoint of
    the update in progress', though update 4 had finished and only its checkpoint was missing."""
    import pilot.checkpoint as checkpoint

    real = checkpoint.atomic_torch_save

    def stopped_at_four(obj, path, update=None):
        if update == 4:
            raise KeyboardInterrupt("second SIGTERM: stopping at once")
        return real(obj, path, update)

    monkeypatch.setattr(checkpoint, "atomic_torch_save", stopped_at_four)
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6")
    train(cfg, tmp_path)
    cause = run_json(tmp_path)["stop_cause"]
    assert "at update 4" in cause and "no checkpoint of update 4: a resume continues from update 2, the newest" in cause


def test_a_signal_before_a_resume_read_its_checkpoint_records_the_update_the_run_stands_at(
    make_cfg, tmp_path, monkeypatch
):
    """A signal while a resume started (before its checkpoint was read) was recorded "at update 0", with
    updates 1-4 done and their checkpoint on disk; and a second signal inside the first checkpoint's save
    said "a resume continues from the newest one saved" when none was."""
    import pilot.checkpoint as checkpoint
    import pilot.train as training

    real = checkpoint.atomic_torch_save

    def stopped_at(update_to_stop):
        def save(obj, path, update=None):
            if update == update_to_stop:
                raise KeyboardInterrupt("second SIGTERM: stopping at once")
            return real(obj, path, update)

        return save

    monkeypatch.setattr(checkpoint, "atomic_torch_save", stopped_at(2))
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6")
    train(cfg, tmp_path)
    assert "none was saved yet, so a resume starts from update 0" in run_json(tmp_path)["stop_cause"]
    monkeypatch.setattr(checkpoint, "atomic_torch_save", stopped_at(6))
    train(cfg, tmp_path)  # resumes from 0, saves updates 2 and 4, stops at 6

    def signal_while_reading(*args, **kwargs):
        raise KeyboardInterrupt("SIGTERM while the resume started")

    before = run_json(tmp_path)
    real_find = training.find_resume_state
    monkeypatch.setattr(training, "find_resume_state", signal_while_reading)
    train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert "at update 4 (while it resumed from update 4, before any further update" in record["stop_cause"]
    assert record["interrupted_by"][-1]["at_update"] == 4
    # that attempt is one more entry under resumes (it was in none, and its stop counted the pause before it as
    # running time); the run's measurements stay its earlier attempts' (seconds_per_update was null)
    assert len(record["resumes"]) == len(before["resumes"]) + 1 and record["resumes"][-1]["stopped_before_it_began"]
    assert record["resumes"][-1]["previous_finished_at"] == before["finished_at"]
    assert record["seconds_per_update"] == pytest.approx(before["seconds_per_update"])
    assert record["updates_done"] == before["updates_done"]
    # stopped once the record was reopened, before the checkpoint was restored: the run stands at the checkpoint
    monkeypatch.setattr(training, "find_resume_state", real_find)
    real_restore = training.restore_training_state
    monkeypatch.setattr(training, "restore_training_state", signal_while_reading)
    train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == "interrupted" and record["updates_done"] == 4, record  # it had none
    assert record["examples_seen"] > 0 and record["seconds_per_update"] is not None, record
    # a signal while the directory is checked for a finished run: its record is not this attempt's to change
    done = {**record, "status": "ok", "stop_cause": "budget_reached"}
    (tmp_path / "run.json").write_text(json.dumps(done))
    monkeypatch.setattr(training, "restore_training_state", real_restore)
    monkeypatch.setattr(training, "refuse_finished_run", signal_while_reading)
    train(cfg, tmp_path)
    assert run_json(tmp_path) == done


@pytest.mark.parametrize(
    "path", ["/tmp/we ird $x, dir/0-2c", "/tmp/a 'q' dir", "/tmp/a\\'b", "/tmp/end\\", "/tmp/plain"]
)
def test_a_printed_resume_command_gives_hydra_the_directory_as_it_is(path):
    import shlex

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from pilot.run_record import resume_hint

    said = resume_hint(["seed=0"], Path(path), Path("/tmp/sweep"))
    words = shlex.split(said.split(": ", 1)[1])  # pasted into a shell as printed
    assert words[:4] == ["python", "-m", "pilot", "seed=0"] and len(words) == 5, said
    assert OverridesParser.create().parse_override(words[4]).value() == path


def test_a_second_signal_that_stops_at_once_is_recorded_beside_the_first(make_cfg, tmp_path, monkeypatch):
    """SIGTERM (finish the update, save, stop), then a Ctrl-C during that save (stop at once): run.json
    listed the SIGTERM alone and its stop cause named only it, while the Ctrl-C is what stopped the run."""
    import pilot.checkpoint as checkpoint
    import pilot.train as train_module

    sent = []
    real_fault, real_save = train_module.fault_point, checkpoint.atomic_torch_save

    def terminate_after_two(point, update=None, path=None):
        if point == "update" and update == 2 and not sent:
            sent.append("SIGTERM")
            os.kill(os.getpid(), signal.SIGTERM)
        return real_fault(point, update, path)

    def ctrl_c_while_saving(obj, path, update=None):
        if sent == ["SIGTERM"]:
            sent.append("SIGINT")
            os.kill(os.getpid(), signal.SIGINT)
        return real_save(obj, path, update)

    monkeypatch.setattr(train_module, "fault_point", terminate_after_two)
    monkeypatch.setattr(checkpoint, "atomic_torch_save", ctrl_c_while_saving)
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6", "checkpoint.every=0")
    train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert sent == ["SIGTERM", "SIGINT"]
    assert [entry["signal"] for entry in record["interrupted_by"]] == ["SIGTERM", "SIGINT"], record["interrupted_by"]
    assert record["stop_cause"].startswith("interrupted: SIGTERM, then SIGINT at update 2"), record["stop_cause"]


def test_an_attempt_killed_after_a_resume_stopped_when_it_last_wrote_not_when_the_one_before_ended(tmp_path):
    """SIGTERM at 6 s, a resume, kill -9 of that resume 13 s later, a second resume: the record said the
    killed attempt stopped when the first one had (its run.json still held that finished_at), and the
    recap's wall_time_s took both gaps off: 1 s for a run that trained 20 s."""
    from pilot.recap.run_json import wall_time_s
    from pilot.resume import _previous_end

    (tmp_path / "metrics.jsonl").write_text('{"kind": "train", "update": 1, "loss": 1.0}\n')
    last_write = time.mktime((2026, 1, 1, 10, 0, 20, 0, 0, -1))
    os.utime(tmp_path / "metrics.jsonl", (last_write, last_write))
    first_end = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(last_write - 14))
    killed = {"status": "running", "finished_at": first_end}  # as a resume left it before this fix
    end = _previous_end(killed, tmp_path)
    assert end["previous_finished_at"] == now_text(last_write)
    assert "killed" in end["previous_finished_at_from"]
    assert _previous_end({"status": "interrupted", "finished_at": first_end}, tmp_path) == {
        "previous_finished_at": first_end
    }
    stamp = lambda seconds: time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(last_write + seconds))  # noqa: E731
    record = {
        "started_at": stamp(-20),
        "finished_at": stamp(30),
        "resumes": [
            {"previous_finished_at": first_end, "at": stamp(-8)},  # ran 6 s, stopped 6 s
            {**end, "at": stamp(15)},  # the killed attempt ran 8 s to its last write, stopped 15 s
        ],
    }
    assert wall_time_s(record) == 6 + 8 + 15  # the last attempt ran 15 s


def test_a_resumed_attempt_has_no_finished_at_until_it_ends(make_cfg, tmp_path):
    from pilot.resume import continue_record

    cfg = make_cfg()
    (tmp_path / "run.json").write_text(
        json.dumps(
            {"run_id": "r", "status": "interrupted", "finished_at": "2026-01-01T10:00:00+0000", "updates_done": 1}
        )
    )
    data = continue_record(cfg, tmp_path, {"from_update": 0}).data
    assert data["status"] == "running" and data.get("finished_at") is None
    assert "updates_done" not in data  # the attempt before's count, while this one trains: in its resume entry
    assert data["resumes"][-1]["previous_position"] == {"updates_done": 1}
    assert data["resumes"][-1]["previous_finished_at"] == "2026-01-01T10:00:00+0000"
    again = continue_record(cfg, tmp_path, {"from_update": 1}).data  # killed before it recorded any position
    (tmp_path / "run.json").write_text(json.dumps(again))
    assert continue_record(cfg, tmp_path, {"from_update": 1}).data["resumes"][-1]["previous_position"] is None
    # killed at update 3 after logging it (the checkpoint at 1): its last training line says where it stood
    rows = [{"kind": "train", "update": u, "loss": 1.0, "examples_seen": 16 * u} for u in (1, 2, 3)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"kind": "tr')
    position = continue_record(cfg, tmp_path, {"from_update": 1}).data["resumes"][-1]["previous_position"]
    assert position["updates_done"] == 3 and position["examples_seen"] == 48 and "killed" in position["read_from"]


def test_the_control_batch_is_recorded_at_what_its_split_holds(make_cfg):
    """closing.control_examples=100000 on a 91-example validation split: phases.csv recorded 100000
    examples for the export and nothing was said."""
    from hydra.utils import instantiate

    from pilot.closing import control_count

    cfg = make_cfg("closing.control_examples=100000")
    task = instantiate(cfg.data, _convert_="all")
    assert control_count(task, cfg) == len(task.splits["val"]) < 100000
    assert control_count(task, make_cfg("closing.control_examples=4")) == 4


def test_validation_accuracy_is_a_share_of_the_labels_compared_not_of_target_count(make_cfg):
    """Validation accuracy was correct / target_count: a CORN head (target_count: K-1 sub-tasks an example)
    recorded 0.10 where 0.30 of the examples were right, example weights could give more than 1, and a
    regression recorded 0.0 (exact float matches). It is now a share of the labels compared, and None
    where the labels are values."""
    import dataclasses

    from hydra.utils import instantiate

    from pilot.engine.build import build_trainer

    cfg = make_cfg("+experiment=classification", "run.threads=1")
    trainer = build_trainer(cfg)
    items = trainer.task.encoded("val")[:64]
    plain = trainer.evaluate(items=items)
    trainer.task = dataclasses.replace(trainer.task, target_count=lambda b: torch.tensor(4.0 * b["labels"].numel()))
    assert trainer.evaluate(items=items)["accuracy"] == pytest.approx(plain["accuracy"])  # 4 targets an example
    task = instantiate(cfg.data, _convert_="all")
    assert task.count_compared({"labels": torch.tensor([1.5, 2.0])}) == 0  # values: no accuracy (None)
    assert task.count_compared({"labels": torch.tensor([1, -100, 2])}) == 2  # ignored labels are not compared


def test_a_training_run_the_cpu_allocator_refuses_is_recorded_oom(make_cfg, tmp_path, monkeypatch):
    """The CPU allocator's refusal is a RuntimeError: the run was recorded failed/exception, never oom."""
    import pilot.engine.trainer as trainer_module

    real = trainer_module.Trainer.train_step

    def refused(self):
        if self.updates_done == 2:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 225312768 bytes")
        return real(self)

    monkeypatch.setattr(trainer_module.Trainer, "train_step", refused)
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6")
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator"):
        train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == "oom" and record["stop_cause"] == "out of memory at update 3", record


def test_a_signal_inside_an_atomic_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Ctrl-C between writing a file's temporary copy and renaming it left .choice_sheet.csv.<pid>.tmp in
    the run directory for good (an outside examination: 3 of 6 interrupted pilots)."""
    import pilot.run_record as run_record

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_record.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_record.write_text_atomic(tmp_path / "choice_sheet.csv", "gpu,count\n")
    assert list(tmp_path.iterdir()) == []


def test_a_refusal_claims_run_json_holds_the_stop_only_where_it_does(tmp_path):
    """A read-only file system refuses run.json's last write too: the message then says run.json still says
    running (the recap reads such a run as stopped without a record), not that it says where the run stopped."""
    from pilot.errors import RECORD_CLAIM
    from pilot.job_records import as_recorded

    said = f"the system refused access to x (EROFS). What was written before is untouched ({RECORD_CLAIM}). Fix: ..."
    assert "could not record where the run stopped: there is none" in as_recorded(said, tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"status": "running"}))
    told = as_recorded(said, tmp_path)
    assert RECORD_CLAIM not in told and "run.json could not record where the run stopped: it still says running" in told
    (tmp_path / "run.json").write_text(json.dumps({"status": "failed"}))
    assert as_recorded(said, tmp_path) == said


def test_an_error_whose_first_line_only_announces_the_next_is_shown_with_it():
    """torch's load_state_dict error starts "Error(s) in loading state_dict for X:" and says what is wrong on
    the next line: a run's failure line ended at that colon."""
    from pilot.errors import error_line, first_line

    error = RuntimeError(
        'Error(s) in loading state_dict for LlamaForCausalLM:\n\tMissing key(s) in state_dict: "model.layers.2.mlp".'
    )
    shown = 'Error(s) in loading state_dict for LlamaForCausalLM: Missing key(s) in state_dict: "model.layers.2.mlp".'
    assert first_line(error) == shown and error_line(error) == f"RuntimeError: {shown}"
    assert first_line(RuntimeError("one line: whole")) == "one line: whole"
    assert first_line(RuntimeError("")) == "RuntimeError (no message)"


@pytest.mark.parametrize("ending", ["failed", "interrupted"])
def test_a_signal_while_the_record_of_a_run_that_did_not_end_ok_is_written_is_kept(
    make_cfg, tmp_path, monkeypatch, ending
):
    """A signal noted while the record was written set the exit code (128 + it) but was in no record when the
    run had not ended ok (an examination: SIGTERM, then SIGINT during the record; only SIGTERM was kept); and
    each signal's time is when it arrived, not when the run stopped."""
    import pilot.run_ending as ending_module

    real = ending_module.fault_point

    def signal_at(point, *args, **kwargs):
        if point == "record":
            os.kill(os.getpid(), signal.SIGINT)
        return real(point, *args, **kwargs)

    monkeypatch.setattr(ending_module, "fault_point", signal_at)
    monkeypatch.setenv("PILOT_FAULT", "exception@2" if ending == "failed" else "update:SIGTERM@2")
    cfg = make_cfg(*[a for a in TRAIN if not a.startswith("mode")], "budget.value=6")
    with pytest.raises((SystemExit, RuntimeError)):
        train(cfg, tmp_path)
    record = run_json(tmp_path)
    assert record["status"] == ending, record["status"]
    signals = record.get("interrupted_by") or []
    assert signals[-1]["signal"] == "SIGINT" and "while the record of the run" in signals[-1]["arrived"], signals
    if ending == "interrupted":  # the SIGTERM at update 2, stamped when it came, before the SIGINT
        assert signals[0]["signal"] == "SIGTERM" and signals[0]["at"] <= signals[-1]["at"], signals


def test_predictions_name_a_class_by_the_tasks_class_names_not_as_a_vocabulary_token():
    """A classification task that also decodes tokens (for examples.txt) and names its classes in
    TaskData.class_names: predictions.jsonl wrote class 0 as '[PAD]' (decode_tokens of the class id); a
    sequence's labels are still tokens."""
    from types import SimpleNamespace

    from pilot.predictions import _readable

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "good"]
    task = SimpleNamespace(names=lambda: ["positive", "negative", "neutral"],
                           decode_tokens=lambda ids: [vocabulary[i] for i in ids])  # fmt: skip
    assert _readable(task, [0], one_label=True) == "positive" and _readable(task, [2], one_label=True) == "neutral"
    assert _readable(task, [2, 3], one_label=False) == "[CLS]good"
    assert _readable(SimpleNamespace(names=list, decode_tokens=None), [5], one_label=True) == "5"


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _signal_once_replicas_started(process, delay: float = 0.3) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and len(_children(process.pid)) < 2:
        time.sleep(0.02)
    time.sleep(delay)  # the replicas import torch for seconds: no record is open yet
    process.send_signal(signal.SIGTERM)


def test_a_signal_to_the_launcher_of_replicas_stops_it_as_one_process_stops(tmp_path):
    """distributed=ddp2, a SIGTERM to the process the user started: after the last update the run was ok but the
    launcher exited 1 with torch's ProcessExitedException (one process: 143); while the replicas started, a
    FileNotFoundError traceback (run.json), exit 1; while a resume's replicas started, exit 143 with no line and
    no resumes entry."""
    ddp = ("distributed=ddp2", "loop.eval_every=0")
    process = cli(tmp_path / "after", *ddp, "budget.value=4", "closing.control_examples=4", wait=False)
    deadline = time.time() + 180
    while time.time() < deadline and '"kind": "val"' not in _text(tmp_path / "after" / "metrics.jsonl"):
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)  # the final validation is written: the closing runs
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr[-3000:]
    record = run_json(tmp_path / "after")
    assert record["status"] == "ok" and record["signal_after_budget"]["signal"] == "SIGTERM"

    process = cli(tmp_path / "fresh", *ddp, wait=False)
    _signal_once_replicas_started(process)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr[-3000:]
    assert not (tmp_path / "fresh" / "run.json").exists()

    process = cli(tmp_path / "resumed", *ddp, "budget.value=400", wait=False)
    deadline = time.time() + 180
    while time.time() < deadline and _text(tmp_path / "resumed" / "metrics.jsonl").count("train") < 3:
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=300)
    assert run_json(tmp_path / "resumed")["status"] == "interrupted"
    process = cli(tmp_path / "resumed", *ddp, "budget.value=400", wait=False)
    _signal_once_replicas_started(process)
    out, stderr = process.communicate(timeout=300)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr[-3000:]
    record = run_json(tmp_path / "resumed")
    assert record["status"] == "interrupted" and record["resumes"][-1]["stopped_before_it_began"]
    assert "before this attempt began" in out + stderr


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_a_replica_killed_from_outside_is_named_in_the_record(tmp_path):
    """kill -9 of rank 1 (what the kernel's out-of-memory killer does): run.json said only rank 0's gloo
    'Connection reset by peer', not which rank died nor how."""
    process = cli(tmp_path, "distributed=ddp2", "loop.eval_every=0", "budget.value=400", wait=False)
    deadline = time.time() + 180
    while time.time() < deadline and _text(tmp_path / "metrics.jsonl").count("train") < 3:
        time.sleep(0.02)
    ranks = sorted(p for p in _children(process.pid) if "spawn_main" in _text(Path(f"/proc/{p}/cmdline")))
    assert len(ranks) == 2, ranks
    os.kill(ranks[1], signal.SIGKILL)
    process.communicate(timeout=300)
    assert process.returncode != 0
    record = run_json(tmp_path)
    assert record["status"] == "failed" and record["killed_rank"] == {"rank": 1, "signal": "SIGKILL"}
    assert record["error"].startswith("replica rank 1 was killed by SIGKILL (the kernel's out-of-memory killer")


def test_a_metrics_line_the_disk_has_no_room_for_is_cut_back_off(tmp_path, monkeypatch):
    """A disk filled by another process mid-run left metrics.jsonl's last line cut short (an outside
    examination): no longer JSON lines until a resume mended it, while the message said nothing written
    before had changed. The part that was written is cut back off; the write says the disk is full."""
    import errno

    import pilot.metrics_file as metrics_file
    from pilot.errors import DiskFull

    path = tmp_path / "metrics.jsonl"
    lines = metrics_file.MetricsFile(path)
    lines.write_line('{"kind": "train", "update": 1}')
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd, data):  # what a nearly full disk does: a short write, then ENOSPC
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(metrics_file, "_append", half_then_full)
    with pytest.raises(DiskFull, match="metrics.jsonl"):
        lines.write_line('{"kind": "train", "update": 2, "loss": 4.5}')
    assert path.read_bytes() == before
    monkeypatch.undo()
    lines.write_line('{"kind": "train", "update": 2}')
    lines.close()
    assert [json.loads(line)["update"] for line in path.read_text().splitlines()] == [1, 2]


def test_a_reload_verdict_that_does_not_fit_on_the_disk_is_recorded_as_it_was_given(tmp_path):
    """The disk full when the reload process wrote its verdict: the closing was recorded 'fail' with the
    passing check's own words as the failure, pointing at an empty reload_check.error.txt beside an empty
    .reload_check.json.tmp (an outside examination, 2026-12-07)."""
    run = tmp_path / "run"
    done = run_pilot(run, "mode=train", "budget.value=20", "run.threads=1", fault="enospc_verdict")
    assert done.returncode == 0, done.stderr[-2000:]
    closing = json.loads((run / "run.json").read_text())["closing"]
    assert closing["verdict"] == "pass", closing
    assert "reproduces" in closing["reason"] and "(not kept in reload_check.json: No space left" in closing["reason"]
    export = sorted(p.name for p in (run / "export").iterdir())
    assert not [name for name in export if name.endswith(".tmp") or name.startswith("reload_check")], export


def test_a_childs_output_that_does_not_fit_is_said_not_kept_and_leaves_no_empty_file(tmp_path, monkeypatch):
    from pilot.errors import write_failure

    def full(self, *args, **kwargs):
        with open(self, "w"):
            pass  # created, then no space for a byte of it
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    stderr = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad weights\n'
    said = write_failure(tmp_path / "reload_check.error.txt", stderr, 1)
    assert said == (
        "ValueError: bad weights (whole error: not kept: reload_check.error.txt could not be written, "
        "No space left on device)"
    )
    assert not (tmp_path / "reload_check.error.txt").exists()


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv")
def test_a_run_directory_made_read_only_mid_run_is_said_by_the_first_file_refused(tmp_path):
    """A run whose directory was made read-only after its first checkpoint: the message named .phases.csv.tmp, refused while
    the failure was recorded, not the checkpoint the run could not save (an outside examination, 2026-12-07);
    root ignores permissions, so the run runs without that capability."""
    run = tmp_path / "run"
    command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "pilot"]
    job = subprocess.Popen(
        [*command, "mode=train", "budget.value=600", "checkpoint.every=10", "run.threads=1", f"hydra.run.dir={run}"],
        cwd=Path(__file__).resolve().parents[1],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (run / "checkpoints" / "ckpt-00000010.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.chmod(run / "checkpoints", 0o555)
    os.chmod(run, 0o555)
    try:
        _, stderr = job.communicate(timeout=300)
    finally:
        os.chmod(run, 0o755)
        os.chmod(run / "checkpoints", 0o755)
    said = [line for line in stderr.splitlines() if line.startswith("pilot: ")]
    assert job.returncode == 2 and len(said) == 1, stderr[-3000:]
    assert said[0].startswith(f"pilot: the system refused access to {run}/checkpoints/ckpt-"), said
    assert "run.json could not record where the run stopped: it still says running" in said[0]
