"""The sweep on a real single-node SLURM cluster through submitit. Nothing here is mocked.

Start the cluster with `bash scripts/slurm_cluster.sh start` (as root). Without a cluster these
tests skip and say so; with CI=true a missing cluster is a failure.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
# one pytest-xdist worker runs every cluster test, one after another: the one-node cluster's CPUs are few
pytestmark = pytest.mark.xdist_group("slurm_cluster")
START = "start it with: bash scripts/slurm_cluster.sh start"


def cluster_ready() -> bool:
    if shutil.which("srun") is None:
        return False
    try:
        return subprocess.run(["srun", "-N1", "-n1", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module", autouse=True)
def cluster():
    if not cluster_ready():
        if os.environ.get("CI") == "true":
            pytest.fail(f"no SLURM cluster reachable in CI; .ci/run must {START}")
        pytest.skip(f"no SLURM cluster reachable; {START}")


JOB = [
    "mode=train",
    "+experiment=classification",
    "budget.fixed=updates",
    "loop.eval_every=0",
    "closing.control_examples=0",
    "hydra/launcher=slurm",
    "run.threads=1",
]


def launch(tmp_path, *overrides, fault=None, launcher="slurm"):
    job = [f"hydra/launcher={launcher}" if line == "hydra/launcher=slurm" else line for line in JOB]
    command = [sys.executable, "-m", "pilot", *job, f"campaign.sweep_root={tmp_path}/sweeps", *overrides, "-m"]
    env = {k: v for k, v in os.environ.items() if k != "PILOT_FAULT"}
    if fault:  # sbatch exports the submitting environment to the job
        env["PILOT_FAULT"] = fault
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process, timeout=600, code=0):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == code, output[-3000:]
    return output


def job_runs(tmp_path):
    return sorted(Path(p).parent for p in glob.glob(f"{tmp_path}/sweeps/*/*/*/run.json"))


def wait_for_updates(tmp_path, count, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for path in glob.glob(f"{tmp_path}/sweeps/*/*/*/metrics.jsonl"):
            if sum(1 for _ in open(path)) >= count:
                return
        time.sleep(0.5)
    raise AssertionError(f"no job reached {count} updates")


def preempt_running_job(tmp_path):
    """USR2 (submitit's preemption signal) to this test's own job, found by its submitit folder."""
    folders = glob.glob(f"{tmp_path}/sweeps/*/*/.submitit/*")
    jobs = sorted({Path(f).name for f in folders if Path(f).name[0].isdigit()})
    assert len(jobs) == 1, f"expected this test's one job, found {jobs}"
    subprocess.run(["scancel", "--signal=USR2", jobs[0]], check=True)


def final_weights(run_dir):
    from pilot.checkpoint import latest_valid_checkpoint

    _, state = latest_valid_checkpoint(Path(run_dir) / "checkpoints")
    return state["position"]["updates_done"], state["model"]


def test_sweep_on_the_cluster_gives_the_local_recap_columns(tmp_path):
    args = ["budget.value=4", "optim.lr=1e-3,2e-3", "seed=0"]
    finish(launch(tmp_path / "slurm", *args))
    local = subprocess.run(
        [
            sys.executable,
            "-m",
            "pilot",
            *[a for a in JOB if not a.startswith("hydra/")],
            f"campaign.sweep_root={tmp_path}/local/sweeps",
            *args,
            "-m",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert local.returncode == 0, local.stderr[-2000:]
    slurm_recap = pd.read_csv(next((tmp_path / "slurm").glob("sweeps/*/*/recap.csv")))
    local_recap = pd.read_csv(next((tmp_path / "local").glob("sweeps/*/*/recap.csv")))
    assert list(slurm_recap.columns) == list(local_recap.columns)
    assert len(slurm_recap) == 2 and (slurm_recap["status"] == "ok").all()


def test_preempted_job_is_requeued_and_ends_as_if_uninterrupted(tmp_path):
    process = launch(tmp_path, "budget.value=400", "checkpoint.every=0", "batch.micro_batch=1", "batch.accumulation=16")
    wait_for_updates(tmp_path, 40)
    preempt_running_job(tmp_path)
    finish(process)
    (run_dir,) = job_runs(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and len(record["interruptions"]) == 1
    assert record["resumes"][0]["from_update"] == record["interruptions"][0]["at_update"] > 0
    # the same job without interruption, run locally in one go
    reference = tmp_path / "reference"
    local = subprocess.run(
        [
            sys.executable,
            "-m",
            "pilot",
            *[a for a in JOB if not a.startswith("hydra/")],
            "budget.value=400",
            "checkpoint.every=0",
            "batch.micro_batch=1",
            "batch.accumulation=16",
            f"hydra.run.dir={reference}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert local.returncode == 0, local.stderr[-2000:]
    updates, weights = final_weights(run_dir)
    reference_updates, reference_weights = final_weights(reference)
    assert updates == reference_updates == 400
    assert all(torch.equal(weights[k], reference_weights[k]) for k in weights)
    recap = pd.read_csv(next(tmp_path.glob("sweeps/*/*/recap.csv")))
    assert recap["status"].tolist() == ["ok"] and recap["updates_done"].tolist() == [400]


def test_job_preempted_past_its_requeues_ends_as_preempted(tmp_path):
    process = launch(
        tmp_path,
        "budget.value=400",
        "checkpoint.every=0",
        "checkpoint.max_requeues=0",
        "batch.micro_batch=1",
        "batch.accumulation=16",
    )
    wait_for_updates(tmp_path, 20)
    preempt_running_job(tmp_path)
    finish(process)
    (run_dir,) = job_runs(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "preempted" and 0 < record["updates_done"] < 400
    recap = pd.read_csv(next(tmp_path.glob("sweeps/*/*/recap.csv")))
    assert recap["status"].tolist() == ["preempted"]


def test_job_that_raises_ends_as_failed_with_its_error(tmp_path):
    # (a bad setting such as model.hidden=-5 is refused by validation before the job writes anything)
    output = finish(launch(tmp_path, "budget.value=4", fault="exception@2"), code=1)  # the sweep is not complete
    assert "pilot: 1 job(s) of the sweep failed" in output
    recap = pd.read_csv(next(tmp_path.glob("sweeps/*/*/recap.csv")))
    assert recap["status"].tolist() == ["failed"]
    (run_dir,) = job_runs(tmp_path)
    assert "RuntimeError" in json.loads((run_dir / "run.json").read_text())["error"]


def test_two_tasks_per_node_form_ddp_replicas(tmp_path):
    """With the sweep directory given (no random part of its own to share), each task resolved the job's
    subdir with a suffix of its own: rank 1's directory held .hydra/ alone, recapped unreadable, exit 1."""
    sweep = tmp_path / "sweeps" / "given" / "here"
    finish(launch(tmp_path, "budget.value=3", "hydra.launcher.tasks_per_node=2", "distributed=ddp2",
                  f"hydra.sweep.dir={sweep}"))  # fmt: skip
    assert len([d for d in sweep.iterdir() if d.is_dir() and not d.name.startswith(".")]) == 1
    (run_dir,) = job_runs(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok"
    assert record["batch_plan"]["replicas"] == 2 and record["examples_seen"] == 3 * 32


def test_the_fsdp_preset_runs_two_sharded_ranks_as_two_tasks(tmp_path):
    """conf/hydra/launcher/slurm_fsdp.yaml on this single-node CPU cluster: 2 tasks, no GPU."""
    site = ("hydra.launcher.tasks_per_node=2", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1")
    finish(
        launch(tmp_path, "budget.value=3", *site, "hydra.launcher.mem_gb=4", "distributed=fsdp", launcher="slurm_fsdp")
    )
    (run_dir,) = job_runs(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["batch_plan"]["replicas"] == 2
    checkpoint = sorted((run_dir / "checkpoints").glob("ckpt-*.dcp"))[-1]
    assert sorted(p.name for p in checkpoint.glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]  # a shard per task
    state = torch.load(checkpoint / "state.pt", weights_only=True)
    assert state["optimizer_keys"] == "names"


# slow (64 s): its parts run by default: SLURM's two tasks forming ranks (the two tests above) and the
# pilot's rows per rank (tests/test_phases.py::test_replicas_each_write_their_rows)
@pytest.mark.slow
def test_pilot_on_two_tasks_writes_phase_rows_per_rank(tmp_path):
    command = [
        sys.executable,
        "-m",
        "pilot",
        "+experiment=classification",
        "hydra/launcher=slurm",
        "hydra.launcher.tasks_per_node=2",
        "distributed=ddp2",
        "run.threads=1",
        "pilot.steady_steps=2",
        f"campaign.sweep_root={tmp_path}/sweeps",
        "-m",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (phases,) = glob.glob(f"{tmp_path}/sweeps/*/*/*/phases.csv")
    frame = pd.read_csv(phases)
    assert sorted(frame["rank"].unique()) == [0, 1]
    assert (frame[frame["phase"] == "steady_steps"]["replicas"] == 2).all()
    assert (frame[frame["phase"] != "resume_check"]["verdict"] == "pass").all()


def test_a_request_no_node_of_the_partition_meets_is_refused_before_submitting(tmp_path):
    """cpus_per_task past the node's CPUs was accepted by sbatch and pended for ever (squeue: PartitionConfig),
    with nothing said; partition=nosuch and mem_gb past the node were sbatch's errors after the launch."""
    output = finish(launch(tmp_path, "budget.value=2", "hydra.launcher.cpus_per_task=64"), timeout=120, code=2)
    assert "hydra.launcher.cpus_per_task=64" in output and "Fix: hydra.launcher.cpus_per_task=" in output
    assert "no job was launched" in output and not job_runs(tmp_path)
    pending = subprocess.run(["squeue", "--noheader"], capture_output=True, text=True, timeout=30).stdout
    assert not pending.strip(), pending
    output = finish(launch(tmp_path, "budget.value=2", "hydra.launcher.partition=nosuch"), timeout=120, code=2)
    assert "hydra.launcher.partition=nosuch: no such partition" in output


def test_a_launch_whose_job_left_no_result_waits_for_its_other_jobs(tmp_path):
    """squeue's view of a launch's jobs (folders of .submitit named by job id): the sweep whose first job was
    cancelled recapped the others as running and exited while they went on."""
    from pilot.other_jobs import wait_for_other_jobs

    submitted = subprocess.run(["sbatch", "--parsable", "--wrap", "sleep 4", f"--output={tmp_path}/%j.out"],
                               capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    job_id = submitted.stdout.strip().split(";")[0]
    (tmp_path / ".submitit" / job_id).mkdir(parents=True)
    started = time.monotonic()
    assert wait_for_other_jobs(tmp_path, poll_s=0.5) == []
    assert time.monotonic() - started >= 2
    listed = subprocess.run(["squeue", "--noheader", f"--jobs={job_id}"], capture_output=True, text=True, timeout=30)
    assert job_id not in listed.stdout


def test_a_job_cancelled_with_scancel_checkpoints_and_records_sigterm(tmp_path):
    """submitit's own handler ignored SIGTERM: a cancelled job trained on until SLURM's SIGKILL, recorded as
    nothing (a run.json saying running), and the sweep said 'interrupted (SIGINT)', exit 130."""
    process = launch(tmp_path, "budget.value=5000")
    wait_for_updates(tmp_path, 20)
    jobs = subprocess.run(["squeue", "--noheader", "--format=%i"], capture_output=True, text=True, timeout=30)
    subprocess.run(["scancel", *jobs.stdout.split()], check=True, timeout=30)
    output = finish(process, timeout=300, code=143)
    assert "the sweep was interrupted (SIGTERM)" in output
    (run_dir,) = job_runs(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["stop_cause"].startswith("interrupted: SIGTERM")
    assert "checkpoint saved" in record["stop_cause"] and 0 < record["updates_done"] < 5000
