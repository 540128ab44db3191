"""The process started early for the reload and resume checks (``pilot.child_process``): a new
interpreter that holds none of the run's state, runs ``python -m`` jobs as a new process would,
and a check run in it still fails when what it reads was tampered with."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

import pilot.child_process
import pilot.phases.resume_check as resume_check
from pilot.checkpoint import load_checkpoint
from pilot.child_process import ChildProcess, Finished, NewProcess
from pilot.closing import check_in_new_process, export_with_controls
from pilot.closing.reload import ERROR_FILE, RESULT_FILE
from pilot.engine.build import build_trainer
from pilot.phases.gates import PhaseRunner
from pilot.phases.rows import write_phases_csv
from pilot.report import write_report

PROBE = "tests._child_probe"
NOISY = "tests._noisy_model.NoisyMLP"


def _saved_with_doubled_lr(original):
    """``Checkpointer.save`` that doubles the saved learning rate: the optimizer's and the schedule's base
    (a resume takes the next lr from the restored schedule, so doubling the optimizer's alone is healed)."""

    def save_then_tamper(self, trainer, *args, **kwargs):
        path = original(self, trainer, *args, **kwargs)
        state = load_checkpoint(path)
        for group in state["optimizer"]["param_groups"]:
            group["lr"] *= 2
            group["initial_lr"] = group.get("initial_lr", group["lr"]) * 2
        state["scheduler"]["base_lrs"] = [lr * 2 for lr in state["scheduler"]["base_lrs"]]
        torch.save(state, path)
        return path

    return save_then_tamper


@pytest.fixture
def child():
    pilot.child_process._parent_marker = True  # a forked child would inherit it; a new interpreter cannot
    try:
        with ChildProcess(warm=("pilot.closing.cli",)) as started:
            yield started
    finally:
        del pilot.child_process._parent_marker


def test_a_job_runs_in_a_new_interpreter_with_python_m_semantics(child, tmp_path):
    out = tmp_path / "facts.json"
    first = child.run(PROBE, [str(out)], timeout_s=120)
    facts = json.loads(out.read_text())
    assert first.returncode == 0 and "probe ran" in first.stderr
    assert facts["pid"] != os.getpid() and not facts["parent_marker"]
    assert child.run(PROBE, [str(out), "exit", "3"], timeout_s=60).returncode == 3
    refused = child.run(PROBE, [str(out), "exit", "message"], timeout_s=60)
    assert refused.returncode == 1 and "probe says: exit message" in refused.stderr
    assert json.loads(out.read_text())["pid"] == facts["pid"]  # the same child served every job
    usage = child.run("pilot.closing", ["--no-such-flag"], timeout_s=60)  # argparse: exit 2, usage on stderr
    assert usage.returncode == 2 and "usage: python -m pilot.closing" in usage.stderr


def test_a_child_that_dies_fails_its_job_and_a_dead_one_is_replaced(child, tmp_path):
    out = tmp_path / "facts.json"
    died = child.run(PROBE, [str(out), "die", "7"], timeout_s=60)
    assert died.returncode == 7 and "probe ran" in died.stderr  # as a new process that crashed
    replaced = child.run(PROBE, [str(out)], timeout_s=120)  # the child is gone: a new process runs it
    assert replaced.returncode == 0 and json.loads(out.read_text())["pid"] != os.getpid()


def test_a_hung_job_times_out(child, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        child.run(PROBE, [str(tmp_path / "facts.json"), "sleep", "60"], timeout_s=2)


@pytest.mark.parametrize(  # NewProcess is subprocess.run (the previous default): -m slow keeps the suite short
    "runner", [pytest.param(NewProcess, marks=pytest.mark.slow), ChildProcess]
)
def test_the_resume_check_in_either_process_fails_when_the_checkpoint_is_tampered(
    make_cfg, tmp_path, monkeypatch, runner
):
    cfg = make_cfg("+experiment=classification", "pilot.resume_check.updates_before=2")
    process = runner() if runner is NewProcess else runner(optimizer=True)
    try:
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "ok", runner=process)
        assert verdict == "pass", reason
        monkeypatch.setattr(resume_check.Checkpointer, "save", _saved_with_doubled_lr(resume_check.Checkpointer.save))
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "bad", runner=process)
    finally:
        if isinstance(process, ChildProcess):
            process.stop()
    assert verdict == "fail" and "diverges from the uninterrupted one" in reason


@pytest.mark.parametrize("drawing", ["encode_drawing", "collate_drawing_numpy"])
def test_a_task_drawing_from_seeded_generators_resumes_as_the_same_run(make_cfg, tmp_path, monkeypatch, drawing):
    """An outside examination: an encode augmenting from a generator make_task seeded ("the task built in the
    new process encodes other data": this process's task had been encoded by every check before) and a collate
    drawing from NumPy's global generator ("a generator of its own": the check's runs did not seed NumPy)
    failed and warned. Both now resume bit for bit, and a tampered checkpoint still fails."""
    cfg = make_cfg(
        "+experiment=classification",
        "pilot.resume_check.updates_before=2",
        f"data._target_=tests._drawing_tasks.{drawing}",
    )
    instantiate(cfg.data, _convert_="all").encoded("train")  # as the checks before it did
    with ChildProcess() as process:
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "ok", runner=process)
        assert verdict == "pass", reason
        monkeypatch.setattr(resume_check.Checkpointer, "save", _saved_with_doubled_lr(resume_check.Checkpointer.save))
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "bad", runner=process)
    assert verdict == "fail" and "diverges from the uninterrupted one" in reason


def test_a_training_that_is_not_bit_reproducible_gets_a_warn_and_a_bad_resume_of_it_still_fails(
    make_cfg, tmp_path, monkeypatch
):
    """olmoe and qwen2_moe on 2 CPU threads: two uninterrupted runs differ in the last bits. The resume
    is judged against that noise (a second reference run), and a changed learning rate still fails."""
    cfg = make_cfg("+experiment=classification", "pilot.resume_check.updates_before=2", f"model._target_={NOISY}")
    with ChildProcess() as process:
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "ok", runner=process)
        assert verdict == "warn" and "not bit-reproducible" in reason and "within 10x that noise" in reason, reason
        monkeypatch.setattr(resume_check.Checkpointer, "save", _saved_with_doubled_lr(resume_check.Checkpointer.save))
        verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "bad", runner=process)
    assert verdict == "fail" and "learning rates differ" in reason, reason


def test_the_reload_check_in_a_child_fails_when_the_export_is_tampered(make_cfg, tmp_path, child):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    trainer.train_step()
    export_with_controls(trainer.raw_model, trainer.task, cfg, tmp_path)
    assert check_in_new_process(tmp_path, cfg, runner=child)["verdict"] == "pass"
    with torch.no_grad():
        list(trainer.raw_model.parameters())[-1].view(-1)[0] += 1e-3  # one weight of the output layer
    export_with_controls(trainer.raw_model, trainer.task, cfg, tmp_path / "changed")
    (tmp_path / "changed" / "control.safetensors").write_bytes((tmp_path / "control.safetensors").read_bytes())
    result = check_in_new_process(tmp_path / "changed", cfg, runner=child)
    assert result["verdict"] == "fail" and "differs on the control inputs" in result["reason"]


def test_the_phases_picture_is_drawn_in_the_child_or_else_here(make_cfg, tmp_path, child):
    cfg = make_cfg()
    rows = PhaseRunner(cfg, instantiate(cfg.data, _convert_="all"), torch.device("cpu"), tmp_path, runner=child).run()
    write_phases_csv(tmp_path, rows)
    drawn = child.submit("pilot.report", [str(tmp_path)], timeout_s=300)
    assert drawn.result().returncode == 0 and (tmp_path / "phases.png").stat().st_size > 10_000
    header = {"run_id": "r", "variant": "v", "device": "cpu", "verdict": "pass", "memory_note": ""}
    assert write_report(tmp_path, [], rows, [], [], header, drawn)["picture"] == tmp_path / "phases.png"
    (tmp_path / "phases.png").unlink()
    failed: Future = Future()
    failed.set_result(Finished(1, "could not draw"))
    paths = write_report(tmp_path, [], rows, [], [], header, failed)  # drawn here instead
    assert paths["picture"] == tmp_path / "phases.png" and (tmp_path / "phases.png").is_file()


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_parent_killed_with_9_takes_its_child_along():
    code = (  # a child that imports for seconds: without the kernel's help it would outlive its parent that long
        "from pilot.child_process import ChildProcess; import time; "
        "print(ChildProcess(warm=('pilot.closing.cli',), optimizer=True)._process.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 1
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)  # not left importing torch beside the next run


def test_a_shared_child_serves_jobs_one_after_another_and_a_new_environment_gets_a_new_one(tmp_path, monkeypatch):
    """A sweep's jobs in one process share the closing's child; a job with another environment (a
    fault planted for it, another variable) must not run in a child started without it."""
    from pilot.child_process import shared_child, stop_shared_children

    out = tmp_path / "facts.json"
    try:
        first = shared_child(warm=("pilot.closing.cli",))
        assert first.run(PROBE, [str(out)], timeout_s=120).returncode == 0
        pid = json.loads(out.read_text())["pid"]
        again = shared_child(warm=("pilot.closing.cli",))
        assert again is first
        assert again.run(PROBE, [str(out)], timeout_s=120).returncode == 0
        assert json.loads(out.read_text())["pid"] == pid
        monkeypatch.setenv("PILOT_PROBE_SEES", "planted")
        other = shared_child(warm=("pilot.closing.cli",))
        assert other is not first and not first.alive()  # the old one was stopped
        assert other.run(PROBE, [str(out)], timeout_s=120).returncode == 0
        facts = json.loads(out.read_text())
        assert facts["pid"] != pid and facts["env"].get("PILOT_PROBE_SEES") == "planted"
    finally:
        stop_shared_children()


def test_a_reload_that_gave_no_verdict_leaves_no_stale_failure_beside_a_later_verdict(tmp_path):
    class Killed:  # the reload process killed mid-check: no verdict, its output kept
        def run(self, module, args, timeout_s):
            return Finished(-2, "(no output)")

    class Passes:
        def run(self, module, args, timeout_s):
            (tmp_path / RESULT_FILE).write_text(json.dumps({"verdict": "pass", "reason": "bit-identical"}))
            return Finished(0, "")

    class Crashed:  # the reload process ended with an error of its own and no verdict: that is a failure
        def run(self, module, args, timeout_s):
            return Finished(1, "Traceback (most recent call last):\nRuntimeError: the export cannot be read\n")

    killed = check_in_new_process(tmp_path, OmegaConf.create({}), runner=Killed())
    assert killed["verdict"] == "incomplete" and "killed by SIGINT before it answered" in killed["reason"]
    crashed = check_in_new_process(tmp_path, OmegaConf.create({}), runner=Crashed())
    assert crashed["verdict"] == "fail" and "the export cannot be read" in crashed["reason"], crashed
    assert (tmp_path / ERROR_FILE).exists()
    assert check_in_new_process(tmp_path, OmegaConf.create({}), runner=Passes())["verdict"] == "pass"
    assert not (tmp_path / ERROR_FILE).exists()


def test_the_phase_picture_entry_refuses_what_it_cannot_read_without_a_traceback(tmp_path):
    for directory, damaged in ((tmp_path / "none", None), (tmp_path / "empty", b"")):
        directory.mkdir()
        if damaged is not None:
            (directory / "phases.csv").write_bytes(damaged)
        done = subprocess.run(
            [sys.executable, "-m", "pilot.report", str(directory)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"pilot.report: {directory / 'phases.csv'} cannot be read" in done.stderr
    (tmp_path / "header").mkdir()  # read, but no phase measured in it: exit 1, said
    (tmp_path / "header" / "phases.csv").write_text("phase,rank,duration_s\n")
    done = subprocess.run(
        [sys.executable, "-m", "pilot.report", str(tmp_path / "header")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "holds no measured phase: nothing to draw" in done.stderr, done.stderr


def test_a_check_whose_process_was_killed_says_so_not_its_first_output_line(make_cfg, tmp_path):
    """kill -9 of the resume check's process (or the kernel's OOM killer): the reason named runpy's warning,
    the first line of its output, as if the resume had failed."""

    class KilledNine:
        def run(self, module, args, timeout_s):
            return Finished(
                -9, "<frozen runpy>:128: RuntimeWarning: 'pilot.phases.resume_check' found in sys.modules\n"
            )

    reason = resume_check._resume(make_cfg(), tmp_path, 60, KilledNine(), [])
    assert isinstance(reason, resume_check.Killed)  # the check's verdict: incomplete, not fail
    assert "killed by SIGKILL before it answered" in reason and "out-of-memory killer" in reason, reason
    assert "RuntimeWarning" not in reason
    assert "RuntimeWarning" in (tmp_path / "resume_check.error.txt").read_text()  # its output kept


def test_a_resume_check_whose_process_is_killed_is_incomplete_and_one_that_crashes_fails(make_cfg, tmp_path):
    """Killed (kill -9, the out-of-memory killer): nothing was compared, so not ``fail``; a process that
    ends with an error of its own is a resume that failed."""
    cfg = make_cfg("+experiment=classification", "pilot.resume_check.updates_before=2")

    class Ends:
        def __init__(self, code):
            self.code = code

        def run(self, module, args, timeout_s):
            return Finished(self.code, "RuntimeError: the checkpoint cannot be read\n")

    verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "k", runner=Ends(-9))
    assert verdict == "incomplete" and "killed by SIGKILL before it answered" in reason, reason
    verdict, reason = resume_check.run_resume_check(cfg, torch.device("cpu"), tmp_path / "c", runner=Ends(1))
    assert verdict == "fail" and "the checkpoint cannot be read" in reason, reason


class _StoppedWaiting(BaseException):
    """What a Ctrl-C raises in the waiting thread (not KeyboardInterrupt: pytest would stop the session)."""


def test_a_job_whose_caller_stopped_waiting_is_killed_not_let_finish_and_write(tmp_path):
    """A double Ctrl-C during the closing: the run records that it was interrupted and exits; its reload
    job must not go on to write its verdict beside that record (it did, up to 2 s later, while ``stop``
    waited for the child to end)."""
    facts, late = tmp_path / "facts.json", tmp_path / "late.txt"
    main = threading.main_thread().ident

    def interrupt(signum, frame):
        raise _StoppedWaiting

    def interrupt_once_started():
        while not facts.exists():
            time.sleep(0.02)
        signal.pthread_kill(main, signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    child = ChildProcess()
    try:
        threading.Thread(target=interrupt_once_started, daemon=True).start()
        with pytest.raises(_StoppedWaiting):
            child.run(PROBE, [str(facts), "late", "1.0", str(late)], timeout_s=60)
        child.stop()
    finally:
        signal.signal(signal.SIGALRM, previous)
    time.sleep(2.0)
    assert not late.exists(), "the abandoned job ran to its end and wrote after the caller was interrupted"
    assert not child.alive()
