"""The documented plug-in path (examples/my_task, README "Your own model and data") runs and learns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_task"

# the README command, word for word; the test adds only where outputs go and the thread count
COMMAND = [
    "-m",
    "pilot",
    "mode=train",
    "hydra.searchpath=[file://examples/my_task/conf]",
    "model=my_net",
    "data=my_data",
    "budget.value=50",
]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, ["examples/my_task", env.get("PYTHONPATH")]))
    return env


def test_plugin_command_runs_and_learns(tmp_path):
    run_dir = tmp_path / "run"
    # run.threads=1: a tiny model on a shared CPU runs far faster on one thread than on contended ones
    result = subprocess.run(
        [sys.executable, *COMMAND, f"hydra.run.dir={run_dir}", "run.threads=1"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok", record
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = [row for row in rows if row["kind"] == "train"]
    val = [row for row in rows if row["kind"] == "val"]
    assert len(train) == 50 and len(val) == 1
    assert val[0]["loss"] < train[0]["loss"] - 0.05, (train[0], val[0])
    assert val[0]["accuracy"] > 0.7, val[0]


def test_plugin_loss_is_a_sum_over_targets(monkeypatch):
    """The contract the engine relies on: loss_sum = mean loss x target_count (not a mean)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import my_task

    task = my_task.make_task(n_examples=64, split={"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    assert task.splits["train"] and task.splits["val"]
    train_groups = {e.group for e in task.splits["train"]}
    assert train_groups.isdisjoint(e.group for e in task.splits["val"])
    batch = task.collate(task.encoded("train")[:10])
    model = my_task.MajorityNet(in_features=batch["inputs"].shape[1])
    output = task.forward(model, batch)
    count = int(task.target_count(batch))
    assert count == 10
    mean = F.cross_entropy(output, batch["labels"])
    assert torch.allclose(task.loss_sum(output, batch), mean * count)
    assert task.predict(output, batch).shape == batch["labels"].shape


@pytest.mark.parametrize("path", ["conf/model/my_net.yaml", "conf/data/my_data.yaml"])
def test_plugin_configs_carry_no_pilot_schema(path):
    """Users' keys are their own: the example YAML must not pull a schema from pilot's ConfigStore."""
    text = (EXAMPLE / path).read_text()
    assert "_target_: my_task." in text
    assert "defaults" not in text


def _run(*settings: str) -> subprocess.CompletedProcess:
    """The README command with ``settings`` added, at one thread."""
    command = [sys.executable, *COMMAND, *settings, "run.threads=1"]
    return subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)


def test_a_misspelt_setting_of_a_plug_in_model_is_named_not_its_option(tmp_path):
    """model.hiden=64 on the plug-in's model: the suggestion composed the config without the line's
    hydra.searchpath and said "model=my_net: no such option" (and "data=my_data"), never the typo."""
    result = _run("model.hiden=64", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2, result.stderr[-3000:]
    assert "no such option" not in result.stderr and "model.hidden" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(
    "setting, said",
    [  # a TypeError inside make_task without the key, before; the example's loop never ended at length 0
        ("data.n_examples=abc", "data.n_examples='abc': my_task.make_task declares n_examples: int. Fix: an integer"),
        ("data.label_noise=[1]", "data.label_noise=[1]: my_task.make_task declares label_noise: float"),
        # a whole float: accepted, then numpy refused it inside make_task ("got '16.0'"), not naming the key
        (
            "data.length=16.0",
            "data.length=16.0: my_task.make_task declares length: int. Fix: an integer, data.length=16",
        ),
        ("data.length=0", "data.length=0: 512 distinct sequences (data.n_examples) need at least 10 bits"),
        ("model.hidden=null", "model.hidden=None: my_task.MajorityNet declares hidden: int"),  # a failed run, before
        # no example at all: it blamed data.split.val_fraction ("the training split is empty")
        ("data.n_examples=0", "built a task without a single example (every split empty) with data.n_examples=0"),
        # model.in_features (${data.length}) was refused too, a second problem of the same cause
        ("data.length=null", "1 problem(s) in the config:\n  - data.length=None: my_task.make_task declares"),
    ],
)
def test_a_plug_in_argument_of_the_wrong_kind_is_refused_naming_the_key(tmp_path, setting, said):
    run_dir = tmp_path / "run"
    result = _run(setting, f"hydra.run.dir={run_dir}")
    assert result.returncode == 2, result.stderr[-3000:]
    assert said in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert not run_dir.exists()


def test_a_sweep_job_whose_task_code_raises_is_refused_in_one_line_naming_where(tmp_path):
    """A plug-in without annotations given null in one job of a sweep: Hydra's bare 'Error in call to
    target' alone, before; now the sweep is refused before any job, as the single run says it."""
    (tmp_path / "my_task.py").write_text((EXAMPLE / "my_task.py").read_text().replace("length: int = 15", "length=15"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    command = [sys.executable, *COMMAND, "-m", "data.length=15,null", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    said = "the task could not be built: TypeError: '<' not supported between instances of 'NoneType' and 'int'"
    assert said in result.stderr and "(raised at my_task.py:" in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (tmp_path / "sweep").exists()


def test_a_resume_after_your_code_changed_is_refused_and_a_forced_one_is_recorded(tmp_path):
    """A plug-in's module edited between a killed attempt and its resume: the run went on under the new code, its
    record said nothing, and REPRODUCE.md named the new file's hash alone (a rerun differed at every update)."""
    import shutil

    code = tmp_path / "code"
    shutil.copytree(EXAMPLE, code)
    env = {**_env(), "PYTHONPATH": str(code), "PILOT_FAULT": "update@6"}  # SIGKILL after update 6
    run_dir = tmp_path / "run"
    line = [
        sys.executable, "-m", "pilot", "mode=train", f"hydra.searchpath=[file://{code / 'conf'}]", "model=my_net",
        "data=my_data", "budget.value=10", "checkpoint.every=3", "run.threads=1", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    subprocess.run(line, cwd=ROOT, env=env, capture_output=True, timeout=120)
    env.pop("PILOT_FAULT")
    module = code / "my_task.py"
    module.write_text(module.read_text() + "\n# an edit between the attempts\n")
    refused = subprocess.run(line, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "your code changed since the updates in" in refused.stderr and f"my_task.py ({module})" in refused.stderr
    assert "checkpoint.force_resume=true" in refused.stderr and "Traceback" not in refused.stderr
    forced = subprocess.run(
        [*line, "checkpoint.force_resume=true"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert forced.returncode == 0, forced.stderr[-3000:]
    resume = json.loads((run_dir / "run.json").read_text())["resumes"][-1]
    assert resume["from_update"] == 6 and resume["code_changed"][0]["file"] == str(module), resume
    assert resume["code_changed"][0]["sha256_before"] != resume["code_changed"][0]["sha256_now"]
    reproduce = (run_dir / "REPRODUCE.md").read_text()
    assert "resumed under changed code of yours" in reproduce and f"- from update 7: `{module}`" in reproduce, reproduce
