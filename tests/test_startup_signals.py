"""Signals outside a run's own watch (pilot.startup_signals, pilot.sweep_signals): while Hydra writes
its files, between the jobs of a sweep run in this process, to the launching process of a local
parallel sweep, and in a local job before pilot is imported there."""

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRAIN = ["mode=train", "loop.eval_every=0", "run.threads=1"]


def pilot(*args: str, fault: str | None = None, wait: bool = True):
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "SUBMITIT_EXECUTOR")}
    if fault:
        env["PILOT_FAULT"] = fault
    command = [sys.executable, "-m", "pilot", *args]
    if wait:
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def records(sweep: Path) -> list[dict]:
    return [json.loads(Path(p).read_text()) for p in sorted(glob.glob(f"{sweep}/*/run.json"))]


def test_a_signal_while_hydra_writes_its_files_is_one_line_and_changes_nothing(tmp_path):
    """It used to be Hydra's traceback (SIGINT) or a silent death (SIGTERM), leaving a directory
    holding only .hydra/ that a recap would count."""
    fresh = tmp_path / "fresh"
    done = pilot(*TRAIN, "budget.value=3", f"hydra.run.dir={fresh}", fault="hydra_files:SIGTERM")
    assert done.returncode == 143, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "interrupted (SIGTERM) before this command's run started" in done.stderr
    assert not fresh.exists()  # made for this line, holding nothing of a run: removed
    stopped = tmp_path / "stopped"  # a run to continue: its files stay as they are
    first = pilot(*TRAIN, "budget.value=10", f"hydra.run.dir={stopped}", fault="update:SIGTERM@2")
    assert first.returncode == 143, first.stderr[-2000:]
    before = {p.name: p.read_bytes() for p in [*stopped.glob(".hydra/*"), stopped / "run.json"]}
    again = pilot(*TRAIN, "budget.value=10", f"hydra.run.dir={stopped}", fault="hydra_files:SIGINT")
    assert again.returncode == 130 and "Traceback" not in again.stderr, again.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in [*stopped.glob(".hydra/*"), stopped / "run.json"]} == before


def test_sigterm_between_the_jobs_of_a_sweep_in_this_process_writes_the_recap(tmp_path):
    """The basic launcher: a SIGTERM between two jobs (no run watching signals) used to end the
    process at once, silently, with no recap and exit -15."""
    sweep, journal = tmp_path / "sweep", tmp_path / "journal.md"
    process = pilot(
        "-m",
        *TRAIN,
        "budget.value=3",
        "seed=0,1,2",
        f"hydra.sweep.dir={sweep}",
        f"campaign.journal={journal}",
        wait=False,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any(r.get("status") == "ok" for r in _readable(sweep)):
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)  # after the first job's record: between jobs, or in the second
    output, _ = process.communicate(timeout=240)
    assert process.returncode == 143, output[-3000:]
    assert "Traceback" not in output and "the sweep was interrupted (SIGTERM)" in output, output[-3000:]
    assert (sweep / "recap.md").exists()
    assert all(r["status"] in ("ok", "interrupted") for r in records(sweep))  # none left 'running'
    entry = journal.read_text()  # it said "sweep concluded"
    assert f"sweep interrupted (SIGTERM) ({sweep})" in entry and "concluded" not in entry, entry


def test_a_signal_while_a_sweep_jobs_record_is_written_is_said_as_the_sweep_interrupted(tmp_path):
    """The record is finished first and the launch stops with the signal's code; it wrote the recap but
    said nothing of the sweep being interrupted (a flaky CI run landed there)."""
    sweep = tmp_path / "sweep"
    done = pilot("-m", *TRAIN, "budget.value=2", "seed=0,1", f"hydra.sweep.dir={sweep}", fault="record:SIGTERM")
    assert done.returncode == 143, done.stderr[-3000:]
    assert "the sweep was interrupted (SIGTERM)" in done.stderr and "Traceback" not in done.stderr
    assert (sweep / "recap.md").exists() and [r["status"] for r in records(sweep)] == ["ok"]
    assert records(sweep)[0]["signal_after_budget"]["signal"] == "SIGTERM"  # the record says why it exited 143


def _readable(sweep: Path) -> list[dict]:
    found = []
    for path in glob.glob(f"{sweep}/*/run.json"):
        try:
            found.append(json.loads(Path(path).read_text()))
        except (OSError, ValueError):  # being written
            continue
    return found


def _endless_local_sweep(sweep: Path):
    """Two jobs under hydra/launcher=local_parallel that train until a signal stops them."""
    args = [
        "-m",
        *TRAIN,
        "budget.value=100000",
        "seed=0,1",
        "hydra/launcher=local_parallel",
        f"hydra.sweep.dir={sweep}",
    ]
    return pilot(*args, wait=False)


def _until_both_jobs_train(sweep: Path, within_s: float = 240) -> None:
    """Until both jobs of ``_endless_local_sweep`` have written training lines (or ``within_s`` passed)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        metrics = list(sweep.glob("*/metrics.jsonl"))
        if len(metrics) == 2 and all(len(m.read_text().splitlines()) > 2 for m in metrics):
            return
        time.sleep(0.2)


def test_sigterm_to_the_launcher_of_a_local_parallel_sweep_stops_every_job_with_its_checkpoint(tmp_path):
    """Sent to the launching process alone, right after launch (jobs still importing): it used to end
    that process at once and leave the jobs training to their end, with no recap. Each job now gets
    it (held while it starts, then noted), stops after its first update with a checkpoint, and the
    launcher writes the recap and exits 143."""
    sweep = tmp_path / "sweep"
    process = _endless_local_sweep(sweep)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(glob.glob(f"{sweep}/.submitit/*/*_log.err")) < 2:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=240)
    assert process.returncode == 143, output[-3000:]
    assert "Traceback" not in output and "the sweep was interrupted (SIGTERM)" in output, output[-3000:]
    found = records(sweep)
    assert len(found) == 2
    for record in found:
        assert record["status"] == "interrupted" and "SIGTERM" in record["stop_cause"], record["stop_cause"]
        assert "checkpoint saved" in record["stop_cause"] and record["updates_done"] < 100, record["stop_cause"]
    assert (sweep / "recap.md").exists()


@pytest.mark.parametrize(
    "when",
    ["starting", pytest.param("training", marks=pytest.mark.slow)],  # 14 s each; the same watch
)
def test_jobs_of_a_local_parallel_launcher_killed_with_sigkill_stop_with_their_checkpoint(tmp_path, when):
    """kill -9 of the launching process: it can pass nothing on, submitit's controllers are orphaned and
    waited on, and the jobs trained on to their end unseen (beside the next launch, on its GPUs). Each
    job now sees its launcher gone and stops as at a SIGTERM: a checkpoint, interrupted, resumable. Killed
    while its jobs were still starting (an outside examination), the jobs read the orphaned controller's new
    parent as their launcher and trained to the end: the launcher is named to them before any starts."""
    sweep = tmp_path / "sweep"
    process = _endless_local_sweep(sweep)
    try:
        if when == "training":
            _until_both_jobs_train(sweep)
        else:  # both jobs' processes started (their logs exist), neither has trained yet
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(glob.glob(f"{sweep}/.submitit/*/*_log.err")) < 2:
                time.sleep(0.05)
        process.kill()
        process.communicate(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(r["status"] != "running" for r in records(sweep)) < 2:
            time.sleep(0.2)
    finally:  # what did not stop is stopped here, not left to the machine
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    found = records(sweep)
    assert len(found) == 2
    for record in found:
        assert record["status"] == "interrupted" and "SIGTERM" in record["stop_cause"], record["stop_cause"]
        assert "checkpoint saved" in record["stop_cause"], record["stop_cause"]
        # no one sent that SIGTERM: the record said it had been (an outside examination)
        assert "sent by no one: the launching process" in record["stop_cause"], record["stop_cause"]
        assert record["interrupted_by"][-1]["sent_by"].startswith("no one: the launching process")


def test_the_watch_names_the_launcher_by_pid_and_start_time():
    """A pid alone was read again as the orphaned controller's parent; a pid reused is another process."""
    import psutil

    from pilot.sweep_signals import _gone, _identity

    me = psutil.Process()
    assert _gone(me, _identity(me)) is None
    assert _gone(me, f"{me.pid}:{me.create_time() - 5}") == f"the launching process (pid {me.pid})"  # reused pid
    assert _gone(me, "999999999:0.0") == "the launching process (pid 999999999)"


@pytest.mark.slow  # 32 s: a process killed under the job, not a signal pilot handles (the default suite: kill -9 of a job)
def test_a_jobs_submitit_controller_killed_is_named_and_no_signal_is_claimed(tmp_path):
    """kill -9 of one job's submitit controller (not of the launcher): the job stopped as at SIGTERM, but its
    record blamed the launching process, which still ran, and the sweep said it was interrupted by SIGINT
    (exit 130) though no one sent one (an outside examination). The record names the controller, the sweep
    exits 1 saying why; the other job, whose launcher then ends, records that."""
    import psutil

    sweep = tmp_path / "sweep"
    process = _endless_local_sweep(sweep)
    try:
        _until_both_jobs_train(sweep)
        controllers = [c for c in psutil.Process(process.pid).children() if "submitit.local._local" in c.cmdline()]
        controllers[0].kill()
        err, _ = process.communicate(timeout=120)  # stderr joined to stdout
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(r["status"] != "running" for r in records(sweep)) < 2:
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 1 and "SIGINT" not in err, err[-2000:]
    assert "a sweep job stopped without a signal sent to this sweep" in err and "controller of this job" in err
    causes = sorted(r["stop_cause"] for r in records(sweep))
    assert any(f"submitit's controller of this job (pid {controllers[0].pid})" in cause for cause in causes), causes


@pytest.mark.slow  # 30 s each; the default suite sends the launcher alone SIGTERM (the same forwarding)
@pytest.mark.parametrize("name", ["SIGHUP", "SIGINT"])
def test_a_hangup_or_ctrl_c_sent_to_the_launcher_alone_stops_every_training_job_once(tmp_path, name):
    """`kill -HUP <launcher>` (or -INT) while the jobs train: the launcher took it as the terminal's, which
    reaches the jobs too, and passed it on to none; they trained to their end and the launch exited 129
    saying nothing. Each job now gets it from the launcher and stops once, with its checkpoint."""
    sweep = tmp_path / "sweep"
    process = _endless_local_sweep(sweep)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # both jobs training
        metrics = list(sweep.glob("*/metrics.jsonl"))
        if len(metrics) == 2 and all(len(m.read_text().splitlines()) > 2 for m in metrics):
            break
        time.sleep(0.2)
    process.send_signal(getattr(signal, name))  # to the launching process alone, not its group
    try:
        output, _ = process.communicate(timeout=240)
    finally:  # jobs the signal never reached train on: stopped here, not left to the machine
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + getattr(signal, name), output[-3000:]
    assert "Traceback" not in output and f"the sweep was interrupted ({name})" in output, output[-3000:]
    found = records(sweep)
    assert len(found) == 2
    for record in found:
        assert record["status"] == "interrupted" and name in record["stop_cause"], record["stop_cause"]
        assert "checkpoint saved" in record["stop_cause"], record["stop_cause"]


@pytest.mark.parametrize("name", ["SIGINT", "SIGHUP"])
def test_a_local_job_notes_a_ctrl_c_held_while_it_started(name):
    """SIGINT (or a hangup) blocked, as the launcher holds it, and sent before pilot is imported:
    noted on import, not lost (an ignored one used to be dropped, and the job trained to its end)."""
    code = (
        "import os, signal, sys\n"
        "sys.orig_argv = [sys.executable, '-u', '-m', 'submitit.core._submit', 'folder']  # as the job runs\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})\n"
        f"os.kill(os.getpid(), signal.{name})\n"
        "import pilot\n"
        "from pilot.startup_signals import noted\n"
        "from pilot.engine.preemption import InterruptWatch\n"
        "watch = InterruptWatch().install()\n"
        "print(noted(), watch.received)\n"
    )
    env = {**os.environ, "SUBMITIT_EXECUTOR": "local"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [name, name]
    env.pop("SUBMITIT_EXECUTOR")  # not a local job: nothing is noted (the signal stays held here)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["None", "None"], done.stderr[-2000:]


def test_the_launcher_of_a_local_sweep_takes_a_hangup_as_a_ctrl_c():
    """SIGHUP (a closed terminal or ssh session) ended the launching process of a local_parallel
    sweep at once, and the controllers it started with it: no recap, jobs orphaned. It is now held
    like a Ctrl-C (blocked for the processes it starts, which inherit it), noted, and its exit code
    is the hangup's. Here with no job running: nothing to pass on."""
    code = (
        "import os, signal, time\n"
        "import pilot.sweep_signals as sweep\n"
        "from pilot.startup_signals import hold_signals\n"
        "hold_signals(sweep._stop_jobs)\n"
        "os.kill(os.getpid(), signal.SIGHUP)\n"
        "time.sleep(0.5)\n"
        "print(sweep.received(), signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["SIGHUP", "True"]


def test_a_sweep_job_stopped_before_its_record_leaves_no_directory_a_recap_counts(tmp_path):
    """Ctrl-C as a sweep's job starts (the directory locked, its record not yet written): the job's
    directory kept .hydra/ and its log, a recap counted it as an unreadable run, and the log offered to
    resume a run that never began."""
    sweep = tmp_path / "sweep"
    done = pilot("-m", *TRAIN, "budget.value=3", "seed=0,1", f"hydra.sweep.dir={sweep}", fault="setup:SIGINT")
    assert done.returncode == 130, done.stdout[-2000:] + done.stderr[-2000:]
    output = done.stdout + done.stderr
    assert "stopped before the run began" in output and "resume this job" not in output
    # the job's directory went with it, and so did the sweep directory the command made for no run (it held
    # multirun.yaml and a recap of 0 runs, which told the user to start each job)
    assert not sweep.exists() and "no job of this launch had begun: nothing to recap" in output


def test_a_signal_inside_torch_save_stays_a_signal_not_the_writers_error(tmp_path, monkeypatch):
    """A second SIGTERM raised while torch.save's zip writer calls the file's write: the writer then
    fails closing ("unexpected pos"), and that RuntimeError hid the stop, recorded as a crash."""
    import io

    import torch

    from pilot import checkpoint
    from pilot.startup_signals import interrupt_behind

    real_save = torch.save

    class StoppedHandle(io.RawIOBase):
        def __init__(self, handle):
            self.handle, self.writes = handle, 0

        def writable(self):
            return True

        def write(self, data):
            self.writes += 1
            if self.writes == 3:
                raise KeyboardInterrupt("second SIGTERM: stopping at once")
            return self.handle.write(data)

    monkeypatch.setattr(checkpoint.torch, "save", lambda obj, handle: real_save(obj, StoppedHandle(handle)))
    with pytest.raises(RuntimeError) as hidden:  # what torch raises: the interrupt only in its context
        torch.save({"w": torch.zeros(10_000)}, StoppedHandle(io.BytesIO()))
    assert isinstance(interrupt_behind(hidden.value), KeyboardInterrupt)
    assert interrupt_behind(ValueError("no signal")) is None
    with pytest.raises(KeyboardInterrupt, match="second SIGTERM"):
        checkpoint.atomic_torch_save({"w": torch.zeros(10_000)}, tmp_path / "ckpt-00000001.pt")
    assert not (tmp_path / "ckpt-00000001.pt").exists()  # nothing under the checkpoint's name


@pytest.mark.parametrize("mode", ["estimate", "pilot"])
def test_a_ctrl_c_stops_a_sweep_of_pilots_or_estimates_with_130(tmp_path, mode):
    """SIGINT during the first job of a sweep of pilots: that job was recorded interrupted, the next one
    ran and the sweep exited 0 (a sweep of training jobs already stopped with 130)."""
    sweep = tmp_path / "sweep"
    big = ["model.d_model=512", "model.n_layer=16", "data.max_len=512"] if mode == "estimate" else []
    process = pilot("-m", f"mode={mode}", "run.threads=1", "seed=0,1", *big, f"hydra.sweep.dir={sweep}", wait=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(sweep.glob("*/run.json")):
        time.sleep(0.05)
    time.sleep(0.2)  # inside the first job: its estimate takes seconds here, under a second on a fast machine
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=240)
    assert process.returncode == 130, output[-3000:]
    assert len(list(sweep.glob("*/run.json"))) == 1, output[-3000:]  # the second job never started


def test_what_a_sweep_that_lost_a_job_says_is_read_from_the_records():
    """The sweep's end when a job left submitit no result: only a job no process holds is said killed (not one
    still stopping), and a job stopped by no one (its controller gone) is no signal sent to the sweep."""
    import pandas as pd

    from pilot.sweep_ending import _still_running, _stopped_unsent

    frame = pd.DataFrame(
        {
            "run_dir": ["/s/0", "/s/1", "/s/2"],
            "status": ["running", "running", "interrupted"],
            "stop_cause": [
                "no process holds it: its lock, last held by pid 7 on this host, is free: ...",
                None,
                "interrupted: SIGTERM at update 5 (checkpoint saved; sent by no one: submitit's controller ...)",
            ],
        }
    )
    assert _still_running(frame) == ["/s/0"]
    assert "controller" in _stopped_unsent(frame)
    frame.loc[3] = ["/s/3", "interrupted", "interrupted: SIGINT at update 9 (checkpoint saved)"]
    assert _stopped_unsent(frame) == ""  # one job got a signal: the sweep's usual interrupted ending
    assert _still_running(None) == [] and _stopped_unsent(None) == ""


def test_a_sweep_job_stopped_once_hydra_made_its_directory_leaves_no_directory_and_is_said_once(tmp_path):
    """SIGTERM as the second job began, Hydra's files written, its run not yet: its directory (.hydra/ and an
    empty log) stayed, and the recap said the job twice, as an unreadable run and as never started."""
    sweep = tmp_path / "sweep"
    done = pilot("-m", *TRAIN, "budget.value=2", "seed=0,1", f"hydra.sweep.dir={sweep}", fault="job:SIGTERM@1")
    assert done.returncode == 143 and "the sweep was interrupted (SIGTERM)" in done.stderr, done.stderr[-3000:]
    jobs = [d for d in sweep.iterdir() if d.is_dir()]
    assert [r["status"] for r in records(sweep)] == ["ok"] and len(jobs) == 1, [d.name for d in jobs]
    recap = (sweep / "recap.md").read_text()
    assert "Never started: 1 of the 2 jobs" in recap and "seed=1" in recap.split("Never started")[-1], recap
    assert (sweep / "recap.csv").read_text().count("unreadable") == 0  # no row for the job that never ran


def test_a_second_signal_while_an_interrupted_sweeps_recap_is_written_is_one_line(tmp_path):
    """SIGTERM sent twice to a sweep whose jobs run in this process (a scheduler sending it again, Ctrl-C pressed
    twice): the second, while the recap waited for its picture, was a SignalStop traceback, exit 1, and the
    picture's temporary file was left in the sweep directory."""
    sweep = tmp_path / "sweep"
    done = pilot(
        "-m", *TRAIN, "budget.value=6", "seed=0,1", f"hydra.sweep.dir={sweep}", fault="update:SIGTERM@2,recap:SIGTERM"
    )
    assert done.returncode == 143, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "SIGTERM while the recap was written: it was not written" in done.stderr
    assert f"python -m pilot.recap {sweep}" in done.stderr
    assert [r["status"] for r in records(sweep)] == ["interrupted"]
    assert not list(sweep.glob(".recap*")) and not (sweep / "recap.md").exists(), sorted(sweep.iterdir())
