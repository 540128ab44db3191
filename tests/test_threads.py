"""run.threads=0 divides the CPUs this process may use among the processes that share them, says why
in run.json, and the pilot warns when other processes already keep the cores busy (issue 17 item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pilot import cpu_budget
from pilot.cpu_budget import busy_elsewhere, cgroup_quota
from pilot.engine import threads
from pilot.engine.threads import BESIDE_THE_PILOT, choose_threads, load_note

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def eight_cores(monkeypatch):
    """A machine of 8 usable cores, no quota, no SLURM, torch's default 8."""
    monkeypatch.setattr(cpu_budget, "affinity_cores", lambda: 8)
    monkeypatch.setattr(cpu_budget, "cgroup_quota", lambda path=None: None)
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 8)
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)


def test_the_default_divides_the_cores_among_the_replicas(eight_cores):
    assert choose_threads(0, 1).count == 8
    choice = choose_threads(0, 2)
    assert choice.count == 4 and choice.reason == "run.threads=0: 8 CPU(s) (usable cores) / 2 replica(s)"
    assert choose_threads(0, 16).count == 1  # never 0
    assert choose_threads(3, 2).as_dict() == {"count": 3, "reason": "run.threads=3", "busy_elsewhere": None}


def test_a_process_working_beside_this_one_is_left_a_core(eight_cores, monkeypatch):
    """The pilot's checks' process imports torch (and draws phases.png) on one core while the pilot works."""
    choice = choose_threads(0, 1, beside=BESIDE_THE_PILOT)
    assert choice.count == 7 and choice.reason.endswith(
        "/ 1 replica(s), less 1 for the pilot's checks process beside it"
    )
    assert choose_threads(0, 1).count == 8 and choose_threads(2, 1, beside=BESIDE_THE_PILOT).count == 2
    assert choose_threads(0, 1, busy=3.0, beside=BESIDE_THE_PILOT).count == 4  # 8 - 3 busy - 1 beside
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 2)  # a 2-core machine: one each
    assert choose_threads(0, 1, beside=BESIDE_THE_PILOT).count == 1
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 1)  # one core: never 0, and said as shared
    one = choose_threads(0, 1, beside=BESIDE_THE_PILOT)
    assert one.count == 1 and one.reason.endswith("(one core, shared with the pilot's checks process beside it)")


def test_a_single_process_leaves_the_cores_others_keep_busy(eight_cores):
    choice = choose_threads(0, 1, busy=1.2)
    assert choice.count == 7 and "less 1.2 core(s) other processes kept busy" in choice.reason
    assert choose_threads(0, 1, busy=0.3).count == 8  # noise is not load
    assert choose_threads(0, 1, busy=20.0).count == 1
    assert choose_threads(0, 2, busy=3.0).count == 4  # replicas: the division only, the same on every rank
    assert choose_threads(4, 1, busy=3.0).count == 4  # a set count is never changed
    resumed = choose_threads(0, 1, busy=1.2).resumed(8)
    assert resumed.count == 8 and "resumed with the checkpoint's 8" in resumed.reason


def test_a_parallel_sweep_job_takes_its_launchers_cpus_and_slurm_its_allocation(eight_cores, monkeypatch):
    assert choose_threads(0, 1, launcher=2).count == 2
    assert "the launcher's cpus_per_task" in choose_threads(0, 1, launcher=2).reason
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "4")
    assert choose_threads(0, 2).count == 2 and "SLURM_CPUS_PER_TASK" in choose_threads(0, 2).reason
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 2)  # physical cores (or OMP_NUM_THREADS) below the budget
    assert choose_threads(0, 1).count == 2 and "torch's default" in choose_threads(0, 1).reason


def test_the_cgroup_quota_is_read_in_whole_cpus(tmp_path):
    path = tmp_path / "cpu.max"
    for text, cpus in [("max 100000", None), ("250000 100000", 2), ("50000 100000", 1), ("garbage", None)]:
        path.write_text(text + "\n")
        assert cgroup_quota(path) == cpus, text
    assert cgroup_quota(tmp_path / "absent") is None


SPIN = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"


def _another_processs_spinner() -> int:
    """A process spinning one core that is not this one's child (started by a shell that exits)."""
    shell = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "$0" >/dev/null 2>&1 & echo $!', SPIN], capture_output=True, text=True
    )
    return int(shell.stdout.strip())


def test_a_busy_machine_is_seen_and_named():
    spinner = _another_processs_spinner()
    try:
        time.sleep(0.2)
        busy = busy_elsewhere(0.5)
    finally:
        os.kill(spinner, signal.SIGKILL)
    assert busy is not None and busy >= 0.5  # one other process spinning: about one core
    note = load_note(busy, 2)
    assert note and "other processes kept" in note and "Fix:" in note
    assert load_note(0.1, 2) is None and load_note(None, 2) is None


def test_this_processs_own_children_count_as_its_own_time_and_a_recent_sample_saves_the_wait():
    child = subprocess.Popen([sys.executable, "-c", SPIN])  # as the pilot's early child importing torch
    try:
        time.sleep(0.2)
        (_, _, own0), started = cpu_budget._cpu_times(), time.monotonic()
        time.sleep(1.0)  # this process sleeps; its child spins
        (_, _, own1), took = cpu_budget._cpu_times(), time.monotonic() - started
    finally:
        child.kill()
    # the child's CPU time is this process's own, not another's load (it got at least 0.2 of a core,
    # even beside a parallel test worker; without the children's time this process's own is ~0)
    assert own1 - own0 >= 0.2 * took * os.sysconf("SC_CLK_TCK")
    busy_elsewhere(0.25)
    time.sleep(0.3)  # the latest sample (the end of that measurement) is 0.3 s old
    started = time.monotonic()
    busy_elsewhere(0.25, reuse_s=60)
    assert time.monotonic() - started < 0.2  # no new window waited for
    started = time.monotonic()
    busy_elsewhere(0.25, reuse_s=60)  # the latest sample is now too recent: a new window
    assert time.monotonic() - started >= 0.25


def test_run_json_records_the_count_and_its_reason(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "pilot", "mode=train", "budget.value=2", "distributed=ddp2",
               f"hydra.run.dir={run_dir}"]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    recorded = json.loads((run_dir / "run.json").read_text())["threads"]
    assert recorded["count"] >= 1 and recorded["reason"].endswith("/ 2 replica(s)")


def test_only_the_cpus_this_process_may_run_on_are_read_for_load():
    """taskset -c 1 beside a spinner on CPU 0: the whole machine's load was read ('the machine is busy'),
    and on a large host under a CPU quota its busy cores would have cut the threads to 1."""
    stat = (
        "cpu  300 0 100 600 0 0 0 0 0 0\n"
        "cpu0 290 0 10 0 0 0 0 0 0 0\n"  # spinning
        "cpu1 10 0 90 600 0 0 0 0 0 0\n"
        "intr 1 2 3\n"
    )
    assert cpu_budget.usable_jiffies(stat, {1}) == (100.0, 700.0)
    assert cpu_budget.usable_jiffies(stat, {0}) == (300.0, 300.0)
    assert cpu_budget.usable_jiffies(stat, None) == (400.0, 1000.0)  # no mask: the aggregate line


def test_a_quota_on_a_large_busy_host_keeps_its_threads(monkeypatch):
    monkeypatch.setattr(cpu_budget, "affinity_cores", lambda: 64)
    monkeypatch.setattr(cpu_budget, "cgroup_quota", lambda path=None: 2)
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 64)
    assert choose_threads(0, 1, busy=60.0).count == 2  # 4 of its 64 CPUs free: its quota's 2 threads
    assert choose_threads(0, 1, busy=63.0).count == 1


def test_a_v1_or_nested_cgroup_quota_is_read_the_smallest_over_the_groups_above(tmp_path, monkeypatch):
    """Only cgroup v2's root cpu.max was read: a v1 quota (Docker --cpus on a v1 host, this machine's
    cpu controller) or a nested v2 group's was ignored, and a 1-CPU job took 2 threads."""
    from pilot import cpu_budget as budget

    mount = tmp_path / "cgroup"
    job = mount / "cpu,cpuacct" / "slurm" / "job1"
    job.mkdir(parents=True)
    (job / "cpu.cfs_quota_us").write_text("100000\n")
    (job / "cpu.cfs_period_us").write_text("100000\n")
    (job.parent / "cpu.cfs_quota_us").write_text("-1\n")  # the group above: no quota
    (job.parent / "cpu.cfs_period_us").write_text("100000\n")
    listing = tmp_path / "cgroup.txt"
    listing.write_text("4:memory:/slurm/job1\n2:cpu,cpuacct:/slurm/job1\n0::/\n")
    monkeypatch.setattr(budget, "CGROUP_MOUNT", mount)
    monkeypatch.setattr(budget, "PROC_CGROUP", listing)
    assert budget.cgroup_quota() == 1
    assert budget.cpu_budget() == (1, "the cgroup's CPU quota") or budget.affinity_cores() == 1
    (job / "cpu.cfs_quota_us").write_text("-1\n")
    assert budget.cgroup_quota() is None
    unified = mount  # a v2 host: the unified hierarchy is the mount, a group nested in it
    (unified / "cgroup.controllers").write_text("cpu memory\n")
    (unified / "user.slice" / "app").mkdir(parents=True)
    (unified / "user.slice" / "cpu.max").write_text("300000 100000\n")
    (unified / "user.slice" / "app" / "cpu.max").write_text("max 100000\n")
    listing.write_text("0::/user.slice/app\n")
    assert budget.cgroup_quota() == 3  # the parent's limit applies to its child


def test_a_resume_at_another_thread_count_is_recorded_and_said(tmp_path):
    """A run stopped at 1 thread and resumed at run.threads=2: the resume's record keeps the count it ran
    at before (run.json's ``threads`` is the last attempt's), and the log says the run is no longer bit for
    bit and which setting keeps it so."""
    run_dir = tmp_path / "run"
    common = ["mode=train", "budget.value=8", "checkpoint.every=2", f"hydra.run.dir={run_dir}"]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    first = subprocess.run(
        [sys.executable, "-m", "pilot", *common, "run.threads=1"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**env, "PILOT_FAULT": "update:SIGINT@4"},
    )  # fmt: skip
    assert first.returncode == 130, first.stderr[-2000:]
    env.pop("PILOT_FAULT", None)
    again = subprocess.run(
        [sys.executable, "-m", "pilot", *common, "run.threads=2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["threads"]["count"] == 2
    assert record["resumes"][0]["threads_changed"].startswith("1 -> 2 CPU threads")
    assert "resuming at another CPU thread count (1 -> 2" in again.stdout + again.stderr
    assert "run.threads=1, or the default run.threads=0" in again.stdout + again.stderr


@pytest.mark.parametrize("value", ["garbage", "0", "-2"])
def test_a_slurm_cpu_count_that_is_no_count_is_said_to_be_ignored(eight_cores, monkeypatch, caplog, value):
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", value)
    monkeypatch.setattr(cpu_budget, "_said", set())
    assert cpu_budget.cpu_budget() == (8, "usable cores")
    assert f"SLURM_CPUS_PER_TASK={value!r} is not a whole number" in caplog.text
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert cpu_budget.cpu_budget() == (3, "SLURM_CPUS_PER_TASK")


def test_a_launchers_cpus_per_task_beyond_the_machine_is_said_and_recorded(eight_cores, monkeypatch, caplog):
    """hydra/launcher=local_parallel hydra.launcher.cpus_per_task=64 on a smaller machine: the job ran on what it
    had, exit 0, nothing said, and run.json's reason never named the 64."""
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    monkeypatch.setattr(cpu_budget, "_said", set())
    cores, source = cpu_budget.cpu_budget(64)
    assert cores == 8 and "cpus_per_task=64 asks more than the 8 this job may use" in source
    assert "hydra.launcher.cpus_per_task=64: this job may use 8 CPU(s) here" in caplog.text
    assert cpu_budget.cpu_budget(4) == (4, "the launcher's cpus_per_task")  # within the machine: a limit
