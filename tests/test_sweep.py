"""The sweep: a diverged job keeps its row, relaunches link to their parent, ids never collide,
and the recap survives unreadable runs."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from pilot.recap import build_recap, collect, summarise

REPO = Path(__file__).resolve().parents[1]
# a small, fast sweep on the digits task: same declared rules as lr_sweep, fewer updates
SMALL = [
    "+experiment=lr_sweep",
    "data=digits",
    "model=mlp_classifier",
    "budget.value=12",
    "loop.eval_every=4",
    "closing.control_examples=0",
    "checkpoint.every=0",
    "optim.warmup_updates=0",
]


def pilot(tmp_path, *args, multirun=False):
    command = [
        sys.executable,
        "-m",
        "pilot",
        *SMALL,
        f"campaign.sweep_root={tmp_path}/sweeps",
        f"campaign.run_root={tmp_path}/outputs",
        *args,
    ] + (["-m"] if multirun else [])
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def sweep_dirs(tmp_path):
    return sorted(p.parent for p in (tmp_path / "sweeps").glob("*/*/multirun.yaml"))


def test_diverged_job_keeps_its_row_and_the_others_finish(tmp_path):
    journal = tmp_path / "journal.md"
    done = pilot(
        tmp_path, "optim.lr=0.003,9", "seed=0", "optim.grad_clip=0", f"campaign.journal={journal}", multirun=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (sweep,) = sweep_dirs(tmp_path)
    recap = pd.read_csv(sweep / "recap.csv")
    assert len(recap) == 2
    diverged = recap[recap["status"] == "diverged"]
    assert len(diverged) == 1 and "optim.lr=9" in diverged["variant"].iloc[0]
    assert diverged["stop_cause"].iloc[0].startswith("diverged:")
    assert diverged["updates_done"].iloc[0] < 12  # stopped at its step, recorded
    phases = pd.read_csv(Path(diverged["run_dir"].iloc[0]) / "phases.csv").set_index("phase")
    assert phases.loc["steady_steps", "verdict"] == "fail" and "diverged" in phases.loc["steady_steps", "detail"]
    assert phases.loc["build_model", "verdict"] == "pass"
    assert (recap[recap["status"] != "diverged"]["status"] == "ok").all()
    assert (recap[recap["status"] == "ok"]["updates_done"] == 12).all()
    text = (sweep / "recap.md").read_text()
    assert "diverged" in text and (sweep / "recap.png").exists()
    entry = journal.read_text()  # the sweep's conclusion, timestamped, in the campaign's journal
    assert f"sweep concluded ({sweep})" in entry and "diverged 1, ok 1" in entry
    assert "The control (optim.lr=1e-4) compares nothing here: no variant has optim.lr=1e-4" in entry


def test_relaunch_gets_a_new_id_and_links_its_parent(tmp_path):
    assert pilot(tmp_path, "optim.lr=2e-4", "seed=1", multirun=True).returncode == 0
    relaunch = pilot(tmp_path, "optim.lr=0.0002", "seed=1")  # the same variant, written differently
    assert relaunch.returncode == 0, relaunch.stderr[-2000:]
    other = pilot(tmp_path, "optim.lr=0.0002", "seed=1", "batch.micro_batch=4")  # another variant
    assert other.returncode == 0
    frame = collect([tmp_path])
    assert len(frame) == 3 and frame["run_id"].is_unique
    first = frame[frame["run_dir"].str.contains("/sweeps/")].iloc[0]
    second = frame[(frame["variant"] == first["variant"]) & (frame["run_id"] != first["run_id"])].iloc[0]
    assert second["parent_id"] == first["run_id"]
    third = frame[frame["variant"].str.contains("micro_batch")].iloc[0]
    assert pd.isna(third["parent_id"])
    assert (frame["status"] == "ok").all()  # the earlier run is still there, untouched


def test_two_sweeps_at_the_same_moment_share_nothing(tmp_path):
    args = [
        sys.executable,
        "-m",
        "pilot",
        *SMALL,
        "budget.value=3",
        "loop.eval_every=0",
        f"campaign.sweep_root={tmp_path}/sweeps",
        "optim.lr=1e-3,2e-3",
        "seed=0",
        "-m",
    ]
    processes = [
        subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    assert all(p.wait(timeout=600) == 0 for p in processes)
    runs = [json.loads(p.read_text()) for p in (tmp_path / "sweeps").glob("**/run.json")]
    assert len(runs) == 4
    assert len({r["run_id"] for r in runs}) == 4
    assert len({str(p.parent) for p in (tmp_path / "sweeps").glob("**/run.json")}) == 4
    assert len(sweep_dirs(tmp_path)) == 2


def test_recap_keeps_unreadable_and_unfinished_runs(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    (good / "run.json").write_text(
        json.dumps({"run_id": "a", "variant": "optim.lr=0.1", "seed": 0, "status": "ok", "overrides": ["optim.lr=0.1"]})
    )
    (good / "metrics.jsonl").write_text(
        json.dumps({"kind": "train", "update": 1, "loss": 2.0})
        + "\n"
        + json.dumps({"kind": "val", "update": 1, "loss": 1.5})
        + "\n"
    )
    running = tmp_path / "running"
    running.mkdir()
    (running / "run.json").write_text(
        json.dumps({"run_id": "b", "variant": "optim.lr=0.2", "seed": 0, "status": "running"})
    )
    (running / "metrics.jsonl").write_text("")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "run.json").write_text("{not json")
    (corrupt / "metrics.jsonl").write_text("")
    missing = tmp_path / "missing"
    (missing / ".hydra").mkdir(parents=True)  # the job started but wrote nothing of ours
    frame = build_recap([tmp_path], tmp_path, control="optim.lr=0.1")
    assert len(frame) == 4
    statuses = dict(zip(frame["run_dir"].map(lambda p: Path(p).name), frame["status"]))
    assert statuses == {"good": "ok", "running": "running", "corrupt": "unreadable", "missing": "unreadable"}
    assert (tmp_path / "recap.csv").exists() and "unreadable" in (tmp_path / "recap.md").read_text()


def _runs(values):
    rows = []
    for variant, losses in values.items():
        for seed, loss in enumerate(losses):
            rows.append(
                {
                    "variant": variant,
                    "seed": seed,
                    "status": "ok",
                    "final_val_loss": loss,
                    "run_id": f"{variant}-{seed}",
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "values, expected",
    [
        (
            {"optim.lr=0.0001": [1.00, 1.02, 0.98], "optim.lr=0.0002": [0.80, 0.81, 0.79]},
            "lower validation loss than the control",
        ),
        (
            {"optim.lr=0.0001": [1.00, 1.10, 0.90], "optim.lr=0.0002": [0.97, 1.07, 0.87]},
            "Lower, but within it (not shown better or worse",  # not "the control remains the best"
        ),
        (
            {"optim.lr=0.0001": [1.00, 1.10, 0.90], "optim.lr=0.0002": [1.03, 1.13, 0.93]},
            "the control remains the best choice",
        ),
        ({"optim.lr=0.0001": [1.00], "optim.lr=0.0002": [0.5]}, "spread is unknown"),
    ],
)
def test_summary_judges_against_the_seed_spread(values, expected):
    summary, lines = summarise(_runs(values), "optim.lr=1e-4")
    assert expected in lines[0]
    control = summary[summary["is_control"]].iloc[0]
    assert control["runs"] == len(values["optim.lr=0.0001"])
    assert "seed 0:" in control["per_seed"]  # every seed's value, not only the best


def test_in_a_grid_each_variant_is_compared_with_the_control_of_its_other_settings():
    """optim.lr x optim.weight_decay with the control on optim.lr: lr=3e-3,wd=0 was compared with the
    pooled (and newest-per-seed) control rows, in fact with lr=1e-3,wd=0.5."""
    grid = {
        "optim.lr=0.001,optim.weight_decay=0": [4.60, 4.62],
        "optim.lr=0.001,optim.weight_decay=0.5": [4.70, 4.72],
        "optim.lr=0.003,optim.weight_decay=0": [4.00, 4.02],
        "optim.lr=0.003,optim.weight_decay=0.5": [4.65, 4.67],
    }
    summary, _ = summarise(_runs(grid), "optim.lr=1e-3")
    rows = summary.set_index("variant")
    assert rows.loc["optim.lr=0.003,optim.weight_decay=0", "diff_vs_control"] == pytest.approx(4.01 - 4.61)
    assert rows.loc["optim.lr=0.003,optim.weight_decay=0.5", "diff_vs_control"] == pytest.approx(4.66 - 4.71)
    assert rows.loc["optim.lr=0.003,optim.weight_decay=0", "control"] == "optim.lr=0.001,optim.weight_decay=0"


def test_a_declared_sweep_started_without_m_says_only_one_run_starts(tmp_path):
    done = pilot(tmp_path, "mode=train", "budget.value=2", "loop.eval_every=0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "this config declares a sweep" in done.stdout and "Add -m" in done.stdout  # the log: stdout


def test_a_sweep_with_a_job_pilot_would_refuse_launches_no_job(tmp_path):
    done = pilot(tmp_path, "batch.micro_batch=0,2", multirun=True)
    assert done.returncode == 2 and "none was launched" in done.stderr, done.stderr[-2000:]
    assert "batch.micro_batch=0: must lie in (0, 2147483647]" in done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "sweeps").glob("*/*/*/run.json"))
    assert not list((tmp_path / "sweeps").glob("*/*")), "the sweep directory made for the line is left behind"


def test_local_parallel_launcher_runs_the_jobs_and_the_recap(tmp_path):
    done = pilot(
        tmp_path,
        "optim.lr=1e-3,2e-3",
        "seed=0",
        "budget.value=4",
        "loop.eval_every=0",
        "hydra/launcher=local_parallel",
        "run.threads=1",
        multirun=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (sweep,) = sweep_dirs(tmp_path)
    recap = pd.read_csv(sweep / "recap.csv")
    assert len(recap) == 2 and (recap["status"] == "ok").all()


def test_ctrl_c_on_a_local_parallel_sweep_stops_each_job_once_and_writes_the_recap(tmp_path):
    """One SIGINT to the terminal's process group: each job saves the update in progress and records
    'interrupted' (submitit's controllers used to die with tracebacks and signal their job a second time,
    which stopped it without a checkpoint); the launching process waits, writes the recap, exits 130."""
    import os
    import signal
    import time

    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "pilot", "mode=train", "budget.value=100000", "loop.eval_every=0"]
    command += ["run.threads=1", "seed=0,1", "hydra/launcher=local_parallel", f"hydra.sweep.dir={sweep}", "-m"]
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )  # its own process group, as a terminal's job
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # both jobs training
        metrics = list(sweep.glob("*/metrics.jsonl"))
        if len(metrics) == 2 and all(len(m.read_text().splitlines()) > 3 for m in metrics):
            break
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=240)
    assert process.returncode == 130, output[-3000:]
    assert "Traceback" not in output and "the sweep was interrupted" in output, output[-3000:]
    records = [json.loads(p.read_text()) for p in sweep.glob("*/run.json")]
    assert len(records) == 2
    for record in records:
        assert record["status"] == "interrupted" and "checkpoint saved" in record["stop_cause"], record["stop_cause"]
    recap = pd.read_csv(sweep / "recap.csv")
    assert len(recap) == 2 and (recap["status"] == "interrupted").all()


def test_a_sweep_whose_job_failed_exits_one_naming_it(tmp_path):
    """A job that failed (an error, a full disk) left the sweep incomplete, yet the sweep exited 0 and a
    script gated on it went on; a diverged job (a training outcome, above) still exits 0."""
    env = {**os.environ, "PILOT_FAULT": "exception@2"}
    command = [sys.executable, "-m", "pilot", *SMALL, f"campaign.sweep_root={tmp_path}/sweeps", "seed=0,1", "-m"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    (sweep,) = sweep_dirs(tmp_path)
    statuses = pd.read_csv(sweep / "recap.csv")["status"].tolist()
    assert statuses == ["failed"] * len(statuses) and len(statuses) > 1
    for run_dir in pd.read_csv(sweep / "recap.csv")["run_dir"]:  # each job's traceback is kept beside its record
        assert json.loads((Path(run_dir) / "run.json").read_text())["error_file"] == "error.txt"
        assert "Traceback" in (Path(run_dir) / "error.txt").read_text()
    assert f"pilot: {len(statuses)} job(s) of the sweep failed (status failed: each run.json says why" in done.stderr


def test_a_sweep_whose_job_crashed_before_its_record_exits_one(tmp_path):
    """A job that raised before its run.json was written (torch's rendezvous on a busy port, before) was
    recapped as unreadable, and the sweep exited 0."""
    env = {**os.environ, "PILOT_FAULT": "setup_exception"}
    command = [sys.executable, "-m", "pilot", *SMALL, f"hydra.sweep.dir={tmp_path}/sw", "seed=0,1", "-m"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    assert (pd.read_csv(tmp_path / "sw" / "recap.csv")["status"] == "unreadable").all()
    jobs = len(pd.read_csv(tmp_path / "sw" / "recap.csv"))
    assert f"pilot: {jobs} job(s) of the sweep failed" in done.stderr and "unreadable: no record" in done.stderr


def test_a_relaunch_into_fixed_job_directories_recaps_the_jobs_it_continued_and_found_finished(tmp_path):
    """hydra.sweep.subdir=lr${optim.lr}: a relaunch resumes a job in its old directory, or finds it
    finished there. Those runs are this launch's jobs; the recap said "0 run(s)", every job "never
    started", and replaced the right recap."""
    sweep = tmp_path / "fixed"
    line = [sys.executable, "-m", "pilot", *SMALL, "seed=0", "optim.lr=1e-3,2e-3", f"hydra.sweep.dir={sweep}",
            "hydra.sweep.subdir=lr${optim.lr}", "-m"]  # fmt: skip
    failing = {**os.environ, "PILOT_FAULT": "exception@2"}
    first = subprocess.run(line, cwd=REPO, capture_output=True, text=True, timeout=600, env=failing)
    assert first.returncode == 1 and sorted(p.name for p in sweep.glob("lr*")) == ["lr0.001", "lr0.002"]
    for attempt, extra in (("continued", []), ("found finished", ["run.log_every=7"])):
        # a key that does not define a run (run.*) changed: the same jobs (the recap said "0 run(s)",
        # every job "never started", and the sweep exited 1)
        jobs_before = _files_of(sweep.glob("lr*"))
        again = subprocess.run([*line, *extra], cwd=REPO, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, (attempt, again.stderr[-3000:])
        recap = pd.read_csv(sweep / "recap.csv")
        assert sorted(recap["status"]) == ["ok", "ok"], (attempt, recap[["run_dir", "status"]])
        text = (sweep / "recap.md").read_text()
        assert "# Recap — 2 run(s)" in text and "Never started" not in text and "Left out" not in text, text
    said = again.stdout + again.stderr
    assert "already finished ok in its directory" in said and "refused" not in said
    # the jobs found finished are left to the byte: their log and lock file were rewritten before
    assert _files_of(sweep.glob("lr*")) == jobs_before


def _files_of(directories) -> dict[str, bytes]:
    return {str(f): f.read_bytes() for d in directories for f in sorted(Path(d).rglob("*")) if f.is_file()}


def test_a_relaunch_keeps_a_diverged_job_as_its_result_and_exits_as_the_first_launch(tmp_path):
    """The first launch of a sweep with a diverged job exits 0; launched again into fixed job directories,
    the diverged job was "refused" and the sweep exited 2 (an error the user must fix: nothing was wrong)."""
    sweep = tmp_path / "fixed"
    line = [sys.executable, "-m", "pilot", *SMALL, "seed=0", "optim.grad_clip=0", "optim.lr=0.003,9",
            f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=lr${optim.lr}", "-m"]  # fmt: skip
    first = subprocess.run(line, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    jobs_before = _files_of(sweep.glob("lr*"))
    again = subprocess.run(line, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "kept as this job's result" in again.stderr and "refused" not in again.stderr + again.stdout
    assert sorted(pd.read_csv(sweep / "recap.csv")["status"]) == ["diverged", "ok"]
    assert _files_of(sweep.glob("lr*")) == jobs_before


def test_a_relaunch_compares_the_jobs_it_found_finished_with_those_it_started(tmp_path):
    """A sweep stopped after its control's job, launched again into fixed job directories: the control's run
    (kept, its run.json naming the first launch) and the new job were judged as two sweeps, "no variant to
    compare" — the comparison the user launched for was lost."""
    sweep = tmp_path / "fixed"
    line = [sys.executable, "-m", "pilot", *SMALL, "seed=0", f"hydra.sweep.dir={sweep}",
            "hydra.sweep.subdir=lr${optim.lr}", "campaign.control='optim.lr=0.001'", "-m"]  # fmt: skip
    first = subprocess.run([*line, "optim.lr=1e-3"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    again = subprocess.run([*line, "optim.lr=1e-3,2e-3"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    recap = pd.read_csv(sweep / "recap.csv")
    assert len(recap) == 2 and recap["sweep_id"].nunique() == 2  # each run.json says its own launch
    text = (sweep / "recap.md").read_text()
    assert "sweeps, each judged on its own runs only" not in text and "no variant to compare" not in text, text
    assert "optim.lr=0.002" in text


def test_a_relaunch_whose_every_job_is_refused_exits_two_and_keeps_the_sweep_as_it_was(tmp_path):
    """A fixed-subdir relaunch under another setting: every job refused at run time, yet it exited 0, replaced
    the recap of the two finished runs by 'Recap — 0 run(s)' and deleted recap.png; under local_parallel,
    where each refusal happened in the job's own process, it still did (exit 1, "never started"). Now the
    sweeper refuses such a job before any is launched, whatever the launcher. Then a relaunch that runs
    replaces the recap: the earlier one is kept under its time."""
    sweep = tmp_path / "fixed"
    line = [sys.executable, "-m", "pilot", *SMALL, "optim.lr=1e-3", "seed=0,1", f"hydra.sweep.dir={sweep}",
            "hydra.sweep.subdir=s${seed}", "-m"]  # fmt: skip
    assert subprocess.run(line, cwd=REPO, capture_output=True, timeout=600).returncode == 0
    before = {p.name: p.read_bytes() for p in sweep.iterdir() if p.is_file()}
    assert {"recap.md", "recap.png", "multirun.yaml"} <= set(before)
    for launcher in ([], ["hydra/launcher=local_parallel"]):
        refused = subprocess.run(
            [*line, "optim.weight_decay=0.5", *launcher], cwd=REPO, capture_output=True, text=True, timeout=600
        )
        assert refused.returncode == 2, (launcher, refused.stderr[-3000:])
        assert "2 of the sweep's jobs 0-1 would be refused; none was launched" in refused.stderr, launcher
        assert "holds a finished run" in refused.stderr and "optim.weight_decay" in refused.stderr
        assert {p.name: p.read_bytes() for p in sweep.iterdir() if p.is_file()} == before, launcher
    # one job of two refused (the other, s0, found finished): none launched either, yet the sweep was recapped
    # anew, its recap renamed and multirun.yaml rewritten, as if the finished run in s0 were this launch's job
    partly = [a if not a.startswith("seed=") else "seed=0,-1" for a in line]
    refused = subprocess.run(partly, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "1 of the sweep's jobs 0-1 would be refused; none was launched" in refused.stderr
    assert {p.name: p.read_bytes() for p in sweep.iterdir() if p.is_file()} == before, refused.stdout[-2000:]
    assert subprocess.run([*line, "seed=2"], cwd=REPO, capture_output=True, timeout=600).returncode == 0
    (kept,) = sweep.glob("recap-*.md")  # the first launch's recap, beside this launch's
    assert kept.read_bytes() == before["recap.md"] and "# Recap — 1 run(s)" in (sweep / "recap.md").read_text()
    (definition,) = sweep.glob("multirun-*.yaml")  # and its sweep's definition, which Hydra rewrote (lost, before)
    assert definition.read_bytes() == before["multirun.yaml"] and definition.stem[9:] == kept.stem[6:]


def test_jobs_that_would_share_a_directory_or_leave_the_sweep_are_refused_before_any_runs(tmp_path):
    """hydra.sweep.subdir=same sent two jobs into one directory (the second refused after the first ran, exit
    0); '' trained in the sweep directory itself, beside its recap; '../x' outside it, where no recap looks."""
    for subdir, said in (("same", "gives it job 0's directory"), ("", "in the sweep directory itself"),
                         ("../x", "outside the sweep directory")):  # fmt: skip
        line = [sys.executable, "-m", "pilot", *SMALL, "seed=0,1", f"hydra.sweep.dir={tmp_path}/sw",
                f"hydra.sweep.subdir={subdir}", "-m"]  # fmt: skip
        refused = subprocess.run(line, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert refused.returncode == 2 and said in refused.stderr and "none was launched" in refused.stderr, (
            subdir,
            refused.stderr[-2000:],
        )
        assert not (tmp_path / "sw").exists() and not (tmp_path / "x").exists()


def test_a_comparison_after_different_numbers_of_updates_is_said():
    """A control resumed with budget.value=30 (forced) against a 100-update variant: the difference was
    reported as the variant's, with no word that the runs trained for different lengths."""
    frame = _runs({"optim.lr=0.0001": [1.50, 1.51], "optim.lr=0.0002": [1.00, 1.01]})
    frame["updates_done"] = [30, 30, 100, 100]
    _, lines = summarise(frame, "optim.lr=1e-4")
    assert (
        "Compared after different numbers of updates" in lines[0]
        and "after 100 update(s), its control after 30" in lines[0]
    )
    frame["updates_done"] = 100
    assert "different numbers of updates" not in summarise(frame, "optim.lr=1e-4")[1][0]


def test_a_sweep_refused_before_its_jobs_leaves_an_earlier_launchs_multirun_yaml_as_it_was(tmp_path):
    """Hydra rewrites multirun.yaml before the sweeper checks the jobs: a line refused there (one bad value)
    replaced the record of the earlier launch into the same sweep directory with its own."""
    sweep = tmp_path / "sw"
    sweep.mkdir()
    earlier = "hydra:\n  mode: MULTIRUN\n# the earlier launch's\n"
    (sweep / "multirun.yaml").write_text(earlier)
    os.utime(sweep / "multirun.yaml", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    line = [
        sys.executable,
        "-m",
        "pilot",
        "mode=train",
        "seed=0,1",
        "budget.value=-5",
        f"hydra.sweep.dir={sweep}",
        "-m",
    ]
    refused = subprocess.run(line, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "budget.value=-5" in refused.stderr, refused.stderr[-2000:]
    assert (sweep / "multirun.yaml").read_text() == earlier and sorted(os.listdir(sweep)) == ["multirun.yaml"]
    assert (sweep / "multirun.yaml").stat().st_mtime_ns == 1_700_000_000_000_000_000  # its time too


def test_a_sweep_job_that_fills_the_disk_failed_it_was_not_refused(tmp_path):
    """A job that ran out of space mid-run (recorded failed, disk_full) was said to be 'refused, nothing done in
    its directory' and the sweep exited 2, as for a job that never began; under local_parallel it exited 1.
    It is a failed job: exit 1 naming it, and the command that continues that job alone."""
    env = {**os.environ, "PILOT_FAULT": "enospc@2"}
    sweep = tmp_path / "sw"
    command = [sys.executable, "-m", "pilot", *SMALL, "checkpoint.every=1", f"hydra.sweep.dir={sweep}", "seed=0", "-m"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said[-3000:]
    assert "refused" not in said and "job(s) of the sweep failed" in said and "resume this job: python -m pilot" in said
    assert (pd.read_csv(sweep / "recap.csv")["status"] == "failed").all()
    # the message's own fix is the job's command too: "start the same command again" started every job anew
    assert "start the same command again" not in said and "then resume this job: python -m pilot" in said, said[-3000:]


def test_the_earlier_sweeps_definition_is_on_disk_before_hydra_rewrites_it(tmp_path):
    """A relaunch killed with -9 before its recap lost the earlier launch's multirun.yaml (held in memory
    only) and left one describing a launch that never ran (an outside examination): the earlier one is copied
    to multirun-<its recap's time>.yaml as the launch starts."""
    from omegaconf import OmegaConf

    from pilot.recap.entry import RecapCallback, _launch

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra:\n  overrides:\n    task: [seed=0,1,2]\n")
    (sweep / "recap.md").write_text("# Recap — 3 run(s)\n")
    os.utime(sweep / "recap.md", (1_700_000_000, 1_700_000_000))
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}})
    try:
        RecapCallback().on_multirun_start(config)
        (copy,) = sweep.glob("multirun-*.yaml")
        assert copy.read_text() == (sweep / "multirun.yaml").read_text()
        assert copy.stem[9:] == time.strftime("%Y%m%d-%H%M%S", time.localtime(1_700_000_000))  # as recap-<time>.md
    finally:
        _launch.clear()
