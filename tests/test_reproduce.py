"""REPRODUCE.md of a plug-in run (README, "Your own model and data") repeats the run: its command,
run from another directory in a fresh shell without PYTHONPATH, gives the same losses."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pilot.closing.provenance import command_line, plugin_provenance, targets_in

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_task"
# the README command with budget.value=20; the test adds where outputs go and the thread count
COMMAND = ["hydra.searchpath=[file://examples/my_task/conf]", "model=my_net", "data=my_data", "mode=train"]


def _losses(run_dir: Path) -> list[tuple[str, float]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(row["kind"], row["loss"]) for row in rows]


def _recorded_command(run_dir: Path) -> str:
    block = re.search(r"```bash\n(.*?)```", (run_dir / "REPRODUCE.md").read_text(), re.S).group(1)
    return next(line for line in block.splitlines() if " -m pilot" in line)


def test_the_recorded_command_repeats_a_plugin_run(tmp_path):
    first = tmp_path / "first"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, ["examples/my_task", os.environ.get("PYTHONPATH")])),
    }
    launch = [sys.executable, "-m", "pilot", *COMMAND, "budget.value=20", "run.threads=1", f"hydra.run.dir={first}"]
    result = subprocess.run(launch, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = (first / "REPRODUCE.md").read_text()
    module = EXAMPLE / "my_task.py"
    assert f"file://{EXAMPLE / 'conf'}" in text and str(EXAMPLE) in text  # absolute search path and PYTHONPATH
    assert f"`my_task.make_task`: `{module}` sha256 `{hashlib.sha256(module.read_bytes()).hexdigest()}`" in text

    # a fresh shell elsewhere: no PYTHONPATH but the recorded one, `python` = this interpreter
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = _recorded_command(first).replace("python -m pilot", f"{sys.executable} -m pilot", 1)
    fresh = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    second = tmp_path / "second"
    rerun = subprocess.run(
        ["bash", "-c", f"{command} hydra.run.dir={second}"],
        cwd=elsewhere,
        env=fresh,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert rerun.returncode == 0, command + rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert len(_losses(first)) == 21 and _losses(second) == _losses(first)


def test_pilot_own_runs_record_nothing_more_and_hf_runs_pin_their_packages(tmp_path):
    own = OmegaConf.create({"model": {"_target_": "pilot.models.tiny_gpt.TinyGPT"}, "data": {"path": None}})
    assert plugin_provenance(own) is None
    assert command_line(["optim.lr=0.001"], None) == "python -m pilot optim.lr=0.001"
    pytest.importorskip("transformers")
    data_file = tmp_path / "data.jsonl"
    data_file.write_text("{}\n")
    hf = OmegaConf.create(
        {"data": {"_target_": "pilot.data.hf_instructions.make_task", "path": str(data_file), "tokenizer": "tok"}}
    )
    found = plugin_provenance(hf)
    assert {"transformers", "tokenizers", "datasets"} <= set(found["packages"])
    assert found["files"] == {str(data_file.resolve()): hashlib.sha256(b"{}\n").hexdigest()}
    assert targets_in({"a": [{"_target_": "x.y"}], "_target_": "z.w"}) == ["z.w", "x.y"]


def test_a_run_of_pilots_own_hugging_face_model_pins_the_transformers_that_built_it(tmp_path):
    """model=hf_causal_lm (pilot's own target) left transformers out of REPRODUCE.md: pilot's extras name a
    range of it, and the version that built the model and its kernels ran as much as pilot did."""
    transformers = pytest.importorskip("transformers")
    from pilot.closing.close import write_run_reproduce

    record = {"run_id": "r", "seed": 0, "mode": "train", "code_revision": {}, "overrides": ["model=hf_causal_lm"]}
    hf = OmegaConf.create({"model": {"_target_": "pilot.models.hf_causal_lm.build"}})
    text = write_run_reproduce(tmp_path, record, hf).read_text()
    assert f'pip install "transformers=={transformers.__version__}"' in text
    assert "## Your code and files" not in text  # nothing of the user's ran
    own = OmegaConf.create({"model": {"_target_": "pilot.models.tiny_gpt.TinyGPT"}})
    assert "transformers" not in write_run_reproduce(tmp_path, record, own).read_text()


def test_the_helper_modules_a_plug_in_imports_are_hashed_too(tmp_path, monkeypatch):
    """REPRODUCE.md hashed only the module a _target_ names: a collate or model in a helper module it imports
    could change and still pass the "sha256sum must match" check."""
    import importlib

    from pilot.closing.close import write_reproduce

    package = tmp_path / "mytasks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_common.py").write_text("def collate(items):\n    return items\n")
    (package / "task.py").write_text("from mytasks._common import collate\n\ndef make_task():\n    return collate\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("mytasks.task")
    found = plugin_provenance(OmegaConf.create({"data": {"_target_": "mytasks.task.make_task"}}))
    helper = str((package / "_common.py").resolve())
    assert found["modules"]["mytasks.task.make_task"]["file"] == str((package / "task.py").resolve())
    assert found["helper_modules"][helper] == hashlib.sha256((package / "_common.py").read_bytes()).hexdigest()
    assert not any("/pilot/" in path or "site-packages" in path for path in found["helper_modules"])
    text = write_reproduce(
        tmp_path, {"run_id": "r", "seed": 0, "mode": "pilot", "code_revision": {}}, found
    ).read_text()
    assert f"imported by them: `{helper}`" in text


def test_reproduce_names_the_thread_count_a_default_run_chose_and_a_resume_that_changed_it(tmp_path):
    from pilot.closing.close import write_reproduce

    base = {"run_id": "r", "seed": 0, "mode": "train", "code_revision": {"commit": "abc"}}
    chosen = {**base, "overrides": ["mode=train"], "threads": {"count": 3, "reason": "3 cores, 1 process"}}
    text = write_reproduce(tmp_path, chosen).read_text()
    assert "trained at 3 CPU thread(s)" in text and "`run.threads=3`" in text
    pinned = {**chosen, "overrides": ["mode=train", "run.threads=3"]}  # the command already pins it
    assert "CPU thread" not in write_reproduce(tmp_path, pinned).read_text()
    resumed = {**pinned, "resumes": [{"from_update": 40, "threads_changed": "2 -> 3 CPU threads: the run ..."}]}
    text = write_reproduce(tmp_path, resumed).read_text()
    assert "Resumed at update 40 at another thread count (2 -> 3 CPU threads)" in text and "not bit-identical" in text
    # a default run resumed with run.threads=1: its record's count is the last attempt's, not the run's
    default = {
        **chosen,
        "threads": {"count": 1},
        "resumes": [{"from_update": 30, "threads_changed": "2 -> 1 CPU threads"}],
    }
    text = write_reproduce(tmp_path, default).read_text()
    assert "started at 2 CPU thread(s), chosen by run.threads=0" in text and "`run.threads=1`" not in text, text


def test_a_run_from_a_tree_that_is_no_git_checkout_names_no_commit_to_check_out(tmp_path):
    """An archive or sdist of pilot: REPRODUCE.md said "git checkout None"."""
    from pilot.closing.close import write_reproduce

    record = {"run_id": "r", "seed": 0, "mode": "train", "overrides": ["mode=train"]}
    record["code_revision"] = {"commit": None, "dirty": None, "note": "not a git checkout"}
    text = write_reproduce(tmp_path, record).read_text()
    assert "None" not in text and "\ngit checkout" not in text and "no commit recorded (not a git checkout)" in text
    assert "git checkout abc" in write_reproduce(tmp_path, {**record, "code_revision": {"commit": "abc"}}).read_text()


def test_the_command_of_a_built_in_run_is_quoted_for_the_shell():
    """A value with a space or ${...} was written bare for a run without plug-ins: pasted, the shell split it."""
    import shlex

    words = ["data.path=my dir/d.jsonl", "optim.lr=1e-3", "hydra.sweep.subdir=lr${optim.lr}"]
    command = command_line(words, None)
    assert shlex.split(command) == ["python", "-m", "pilot", *words] and " optim.lr=1e-3 " in command


def test_a_run_of_your_data_file_records_its_hash_and_where_it_was_launched(make_cfg, tmp_path):
    """A built-in task on your data.path (relative) had REPRODUCE.md name the path alone: neither the directory
    it is relative to nor the file's content (an examination)."""
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "a", "response": "b"}\n')
    provenance = plugin_provenance(make_cfg(f"data.path={data}"))
    assert provenance is not None and provenance["launched_in"] == os.getcwd()
    assert provenance["files"] == {str(data.resolve()): hashlib.sha256(data.read_bytes()).hexdigest()}
    assert plugin_provenance(make_cfg()) is None  # pilot's own task and data: nothing more to say
    from pilot.closing.close import write_reproduce

    record = {"run_id": "r", "seed": 0, "mode": "train", "code_revision": {}, "overrides": ["data.path=d.jsonl"]}
    text = write_reproduce(tmp_path, record, provenance).read_text()  # pasted from the checkout, it ran there
    assert f"cd {os.getcwd()}  # where it was launched\npython -m pilot data.path=d.jsonl" in text, text


def test_a_plug_ins_own_data_files_and_the_packages_its_modules_import_are_recorded(tmp_path, monkeypatch):
    """A plug-in reading its data through keys of its own (data.csv_file, data.vocab_dir): REPRODUCE.md named
    neither file nor the transformers its module imports, although every checkpoint fingerprints those files;
    the same command on an edited CSV gave the same REPRODUCE.md (an examination)."""
    import importlib

    from pilot.closing.close import write_reproduce
    from pilot.data.data_files import data_files_fingerprint

    (tmp_path / "csvtask_probe.py").write_text("import transformers\n\ndef make_task(**settings):\n    return None\n")
    csv, vocab = tmp_path / "sent.csv", tmp_path / "tok"
    csv.write_text("text,label\ngood,positive\n")
    vocab.mkdir()
    (vocab / "tokenizer.json").write_text("{}")
    (vocab / "README.md").write_text("not read by a program")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("csvtask_probe")
    cfg = OmegaConf.create(
        {"data": {"_target_": "csvtask_probe.make_task", "csv_file": str(csv), "vocab_dir": str(vocab)}}
    )
    found = plugin_provenance(cfg)
    assert set(found["files"]) == {str(csv.resolve()), str((vocab / "tokenizer.json").resolve())}
    assert found["data_settings"]["data.csv_file"]["fingerprint"] == data_files_fingerprint(cfg)["data.csv_file"]
    assert "transformers" in found["packages"]
    text = write_reproduce(tmp_path, {"run_id": "r", "seed": 0, "mode": "train", "code_revision": {}}, found)
    assert f"`data.vocab_dir`: `{vocab.resolve()}` fingerprint `{data_files_fingerprint(cfg)['data.vocab_dir']}`" in (
        text.read_text()
    )
    csv.write_text("text,label\ngood,neutral\n")
    assert plugin_provenance(cfg)["files"][str(csv.resolve())] != found["files"][str(csv.resolve())]


def test_the_second_pip_line_pins_neither_torch_nor_pilot_nor_a_local_build(tmp_path):
    """A plug-in module importing torch and pilot pinned "torch==2.13.0+cpu" and "pilot==0.1.0" beside the first
    line's torch and checkout: no registry has the +cpu build for a GPU machine, nor pilot (an examination)."""
    from pilot.closing.close import write_reproduce

    found = {"launched_in": str(tmp_path), "searchpath": [], "pythonpath": [], "modules": {}, "files": {},
             "packages": {"pilot": "0.1.0", "torch": "2.13.0+cpu", "transformers": "5.25.0", "foo": "1.0+local"}}  # fmt: skip
    text = write_reproduce(
        tmp_path, {"run_id": "r", "seed": 0, "mode": "train", "code_revision": {}}, found
    ).read_text()
    pins = [line for line in text.splitlines() if line.startswith("pip install")]
    assert pins[1] == 'pip install "foo==1.0" "transformers==5.25.0"', pins
    assert "- package `torch` 2.13.0+cpu" in text  # what ran, as it ran
