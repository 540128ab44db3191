"""``python -m pilot mode=train`` as a user runs it: run directory, run.json, metrics, progress lines."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_training(tmp_path, *overrides, fault=None):
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "PILOT_FAULT"}
    if fault:
        env["PILOT_FAULT"] = fault
    completed = subprocess.run(
        [sys.executable, "-m", "pilot", "mode=train", f"hydra.run.dir={run_dir}", "run.log_every=5", *overrides],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return completed, run_dir


def test_default_task_runs_and_writes_the_output_contract(tmp_path):
    completed, run_dir = run_training(tmp_path, "budget.value=10")
    assert completed.returncode == 0, completed.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    for key in (
        "run_id",
        "parent_id",
        "variant",
        "seed",
        "status",
        "stop_cause",
        "overrides",
        "config_hash",
        "code_revision",
    ):
        assert key in record
    assert record["status"] == "ok" and record["stop_cause"] == "budget_reached"
    assert record["variant"] == "budget.value=10"  # mode and run.* do not define a variant
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train_rows = [r for r in rows if r["kind"] == "train"]
    assert [r["update"] for r in train_rows] == list(range(1, 11))
    assert train_rows[-1]["examples_seen"] == 160
    planned = json.loads((run_dir / "batch_plan.json").read_text())
    assert planned["examples_seen"] == 160 and planned["total_updates"] == 10
    assert planned["targets_seen"] == train_rows[-1]["targets_seen"]  # predicted == delivered
    assert any(r["kind"] == "val" for r in rows)
    output = completed.stdout + completed.stderr
    assert "examples per update = 2 (micro-batch) x 8 (accumulation) x 1 (replicas) = 16" in output
    assert "updates/s, ETA" in output  # not a terminal: periodic plain lines


def test_bad_override_exits_non_zero_naming_the_key(tmp_path):
    completed, run_dir = run_training(tmp_path, "batch.micro_batch=-3")
    assert completed.returncode != 0
    assert "batch.micro_batch=-3" in completed.stderr
    assert not (run_dir / "run.json").exists()


def test_two_runs_never_share_a_directory(tmp_path):
    dirs = set()
    for _ in range(2):
        completed = subprocess.run(
            [sys.executable, "-m", "pilot", "--cfg", "all", "-p", "hydra.run.dir"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        dirs.add(completed.stdout.strip())
    assert len(dirs) == 2


def test_a_failure_after_start_is_recorded_as_failed(tmp_path):
    # a missing data.path is refused by validation before anything starts; this failure comes later
    completed, run_dir = run_training(tmp_path, "budget.value=10", fault="exception@3")
    assert completed.returncode != 0
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and record["stop_cause"] == "exception"
    assert "RuntimeError: injected failure" in record["error"] and record["updates_done"] == 3


def test_spawned_replicas_write_one_run(tmp_path):
    completed, run_dir = run_training(tmp_path, "distributed=ddp2", "budget.value=3")
    assert completed.returncode == 0, completed.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["examples_seen"] == 3 * 32


def test_torchrun_launch_writes_only_rank_zero_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "pilot",
            "mode=train",
            "distributed=ddp2",
            "budget.value=3",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "ok" and record["examples_seen"] == 3 * 32
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # rank 1 left nothing behind


def test_help_lists_the_choices_a_user_has_and_no_schema_entry(tmp_path):
    """--help said "__main__ is powered by Hydra" and listed the schema entries pilot registers in each
    group (schema, schema_tiny_gpt, ...) as if they were options."""
    completed = subprocess.run(
        [sys.executable, "-m", "pilot", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    shown = completed.stdout
    assert shown.startswith("pilot: runs a complete pilot") and "powered by Hydra" not in shown
    assert "model: hf_causal_lm, hf_gpt2, mlp_classifier, tiny_gpt\n" in shown
    assert "hydra/launcher: local_parallel, slurm" in shown and "mode=estimate" in shown
    assert "schema" not in shown.split("== Config ==")[0]
    assert "optim:\n  name: adamw" in shown  # the composed config follows


def test_a_launcher_chosen_without_multirun_is_said_to_start_nothing(tmp_path):
    """hydra/launcher=local_parallel without -m: Hydra runs the one job in this process and said nothing."""
    completed, run_dir = run_training(tmp_path, "budget.value=2", "loop.eval_every=0", "hydra/launcher=local_parallel")
    assert completed.returncode == 0, completed.stderr[-2000:]
    said = completed.stdout + completed.stderr  # the log goes to stdout
    assert "hydra/launcher=local_parallel starts the jobs of a sweep (-m); without -m this one run" in said
    assert json.loads((run_dir / "run.json").read_text())["status"] == "ok"


def test_the_multirun_flag_may_follow_overrides():
    """``python -m pilot +experiment=lr_sweep -m seed=0,1`` was a page of argparse usage ("unrecognized
    arguments: seed=0,1"): the flag now goes before the overrides; a flag's value is never moved."""
    from pilot.config.command_line import flags_first

    assert flags_first(["pilot", "+experiment=lr_sweep", "-m", "seed=0,1"]) == [
        "pilot",
        "-m",
        "+experiment=lr_sweep",
        "seed=0,1",
    ]
    assert flags_first(["pilot", "a=1", "--multirun"]) == ["pilot", "--multirun", "a=1"]
    assert flags_first(["pilot", "--config-name", "-m", "a=1"]) == ["pilot", "--config-name", "-m", "a=1"]
    assert flags_first(["pilot", "a=1"]) == ["pilot", "a=1"]
    # --cfg job or --info among the settings: 'unrecognized arguments: b=2 ... without dashes', before
    assert flags_first(["pilot", "a=1", "--cfg", "job", "b=2"]) == ["pilot", "--cfg", "job", "a=1", "b=2"]
    assert flags_first(["pilot", "a=1", "--info", "config", "b=2"]) == ["pilot", "--info", "config", "a=1", "b=2"]
    assert flags_first(["pilot", "a=1", "--info", "b=2", "--resolve"]) == ["pilot", "--info", "--resolve", "a=1", "b=2"]


def test_a_sweep_line_with_the_flag_between_overrides_runs(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pilot", "mode=estimate", "-m", "run.threads=1", f"hydra.sweep.dir={tmp_path / 's'}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "unrecognized arguments" not in done.stderr, done.stderr[-2000:]
    assert len(list((tmp_path / "s").glob("*/run.json"))) == 1


def broken_factory(**_):
    return list(None)  # a library's own bug while building the model


def test_a_model_whose_construction_raises_is_said_in_one_line_with_the_traceback_kept(tmp_path):
    """A model factory that raised printed Hydra's whole traceback under "pilot crashed" and a
    "crashed: InstantiationException" row: now what could not be built, the error and where, in one line."""
    from hydra.utils import instantiate

    from pilot.pilot_run import SETUP_ERROR, _built_with_error

    try:
        instantiate({"_target_": f"{__name__}.broken_factory"})
    except Exception as error:  # noqa: BLE001 - the failure under test
        said = _built_with_error(error, tmp_path)
    assert said.startswith("the task or model could not be built: TypeError: 'NoneType' object is not iterable")
    assert "(raised at test_entry_point.py" in said and "in broken_factory)" in said
    assert "Traceback" in (tmp_path / SETUP_ERROR).read_text()


def test_a_training_job_whose_model_raises_while_built_says_it_in_one_line_and_records_it(tmp_path):
    """mode=train printed Hydra's "Error executing job ... Error in call to target" for a model whose own
    code raised while built: now the same line the pilot gives (what, the error, where), exit 1, and the
    run recorded failed with its whole traceback in error.txt."""
    module = tmp_path / "raising_net.py"
    module.write_text("class Net:\n    def __init__(self, **settings):\n        raise TypeError('bad hidden size')\n")
    run_dir = tmp_path / "run"
    completed = subprocess.run(
        [sys.executable, "-m", "pilot", "mode=train", f"hydra.run.dir={run_dir}", "model._target_=raising_net.Net"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = completed.stdout + completed.stderr
    assert completed.returncode == 1, said[-2000:]
    assert "the model could not be built: TypeError: bad hidden size (raised at raising_net.py:3" in said
    assert "Error executing job" not in said and "Traceback" not in said
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and (run_dir / "error.txt").is_file()


RAISING_FORWARD = """from pilot.models.tiny_gpt import TinyGPT


class Net(TinyGPT):
    calls = 0

    def forward(self, *args, **kwargs):
        Net.calls += 1
        if Net.calls > 30:  # past the set-up's own checks of forward
            raise ZeroDivisionError('forward boom')
        return super().forward(*args, **kwargs)
"""


def test_a_training_run_whose_own_code_raises_says_it_in_one_line_with_the_traceback_kept(tmp_path):
    """mode=train whose model raised in training printed Hydra's "Error executing job" and a 70-line
    traceback: now one line (the error, where the user's code raised it, where the whole traceback is),
    exit 1, the run recorded failed; the pilot's steps that crash say one line each, their tracebacks in
    <step>.error.txt (one traceback per step on the console, before)."""
    (tmp_path / "raising_forward.py").write_text(RAISING_FORWARD)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for mode in ("train", "pilot"):
        run_dir = tmp_path / mode
        completed = subprocess.run(
            [sys.executable, "-m", "pilot", f"mode={mode}", f"hydra.run.dir={run_dir}", "run.threads=1"]
            + ["model._target_=raising_forward.Net", "budget.value=5"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = completed.stdout + completed.stderr
        assert completed.returncode == 1, said[-2000:]
        assert "Traceback" not in said and "Error executing job" not in said, said[-3000:]
        assert "(raised at raising_forward.py:" in said, said[-2000:]
        assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert "the run failed: ZeroDivisionError: forward boom" in (tmp_path / "train" / "__main__.log").read_text()
    assert "Traceback" in (tmp_path / "train" / "error.txt").read_text()
    assert "Traceback" in (tmp_path / "pilot" / "tiny_subset.error.txt").read_text()
