"""The environment step, its lock, the per-GPU requirements and ``python -m pilot.env_check`` (issue 14).

Everything runs on the CPU: a GPU without bf16 is simulated (``DeviceFacts.from_catalog``), and each
difference env_check must report is made real by editing a copy of the pilot's lock or record (or the
module a target names), never by mocking the comparison.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO_ROOT, compose_config
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pilot import env_check
from pilot.environment import (
    FACTS_FILE,
    LOCK_FILE,
    DeviceFacts,
    LockUnreadable,
    collect,
    environment_step,
    judge,
    read_lock,
)
from pilot.phases.gates import PhaseRunner
from pilot.rental.catalog import load_catalog
from pilot.rental.requirements import campaign_requirements, catalog_statuses, gpu_status, parse_capability
from pilot.run_record import code_revision, config_hash


def make_run(cfg, run_dir: Path, first_step_loss: bool = True) -> Path:
    """A pilot's run directory as env_check reads it: the environment step's files, the resolved
    config, run.json, and the first update's loss from a fresh CPU computation, written where the
    pilot writes it today (phases.csv's first_step detail, 4 significant digits)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    result = environment_step(cfg, run_dir)
    assert result.verdict in ("pass", "warn"), result.reason
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                **{"run_id": "test", "config_hash": config_hash(cfg), "code_revision": code_revision()},
                **{"mode": "pilot", "status": "ok", "verdicts": {"environment": "pass", "phases": "pass"}},
            }
        )
    )
    if first_step_loss:
        task = instantiate(cfg.data, _convert_="all")
        runner = PhaseRunner(cfg, task, torch.device("cpu"), run_dir)
        runner.build_model()
        loss = runner.trainer.train_step().loss
        (run_dir / "phases.csv").write_text(
            f'phase,device,rank,duration_s,verdict,detail\nfirst_step,cpu,0,0.9,pass,"loss {loss:.4g}, 0.9 s"\n'
        )
    return run_dir


@pytest.fixture(scope="module")
def pilot_dir(tmp_path_factory) -> Path:
    return make_run(compose_config([]), tmp_path_factory.mktemp("pilot-run"))


@pytest.fixture
def run_copy(pilot_dir, tmp_path) -> Path:
    """A copy of the pilot's run directory this test may edit."""
    return Path(shutil.copytree(pilot_dir, tmp_path / "run"))


def run_check(run_dir: Path, capsys, *options: str):
    code = env_check.main([str(run_dir), "--no-journal", *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def edit_lock(run_dir: Path, edit) -> None:
    path = run_dir / LOCK_FILE
    path.write_text(edit(path.read_text()))


def edit_facts(run_dir: Path, edit) -> None:
    path = run_dir / FACTS_FILE
    facts = json.loads(path.read_text())
    edit(facts)
    path.write_text(json.dumps(facts))


# --------------------------------------------------------------------------- the step
def test_step_passes_on_the_default_config_and_writes_the_lock(make_cfg, tmp_path):
    cfg = make_cfg()
    task = instantiate(cfg.data, _convert_="all")
    rng = torch.get_rng_state()
    result = environment_step(cfg, tmp_path, task=task)
    assert torch.equal(rng, torch.get_rng_state()), "the step must leave the global RNG as it found it"
    assert result.step == "environment" and result.verdict == "pass", result.reason
    assert f"torch {torch.__version__}" in result.reason

    facts = json.loads((tmp_path / FACTS_FILE).read_text())
    assert facts["python"]["version"] == platform.python_version()
    assert facts["torch"]["version"] == torch.__version__ and facts["device"]["kind"] == "cpu"
    (call,) = facts["attention"]["calls"]  # TinyGPT's two blocks make the same call
    assert call["count"] == 2 and call["head_dim"] == 16 and call["mask"]["dtype"] == "bool"
    (probe,) = facts["attention"]["probes"]
    assert probe["backends"]["math"]["available"] is True
    assert probe["backends"]["mem_efficient"]["available"] is None  # a CUDA kernel: not measurable on CPU
    assert probe["cuda_predicted"]["flash"]["eligible"] is False  # an explicit mask rules flash out
    assert facts["distributed"]["backend"] == "gloo" and facts["distributed"]["initialises"] is True
    model = next(t for t in facts["targets"] if t["key"] == "model._target_")
    source = REPO_ROOT / "pilot" / "models" / "tiny_gpt.py"
    assert model["imports"] and model["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert [d["name"] for d in model["distributions"]] == ["pilot"]
    assert {"torch", "pilot", "numpy"} <= set(facts["campaign_distributions"])

    lock = read_lock(tmp_path / LOCK_FILE)
    assert len(lock) == facts["distributions"] and lock["torch"][1] == torch.__version__
    # the budget: at most 2 s added to the pilot (measured: ~0.5 s on the shared 2-core machine)
    assert result.details["seconds"]["step"] < 2.0, result.details["seconds"]


def test_what_a_targets_module_imports_is_a_campaign_dependency(make_cfg):
    """model=hf_causal_lm's target is pilot's own builder: transformers, which it imports (inside a
    function), was 'not among the campaign's dependencies', so a rental with another major version passed."""
    from pilot.environment.distributions import installed_distributions
    from pilot.environment.targets import target_facts

    installed = installed_distributions()
    builder = target_facts("model._target_", "pilot.models.hf_causal_lm.build", installed)
    assert "transformers" in builder["imported_distributions"]
    data = target_facts("data._target_", "pilot.data.hf_instructions.make_task", installed)
    assert "datasets" in data["imported_distributions"]
    assert "transformers" not in target_facts("model._target_", "pilot.models.tiny_gpt.TinyGPT", installed).get(
        "imported_distributions", []
    )


def test_bf16_fails_on_a_device_without_bf16(make_cfg):
    cfg = make_cfg("precision=bf16")
    t4 = DeviceFacts.from_catalog("T4-16GB", "Tesla T4")
    result = environment_step(cfg, device=t4)
    assert result.verdict == "fail"
    assert "precision.dtype=bf16 needs bf16 support (NVIDIA compute capability >= 8.0" in result.reason
    assert "Tesla T4 (cuda, compute capability 7.5, simulated)" in result.reason
    a100 = environment_step(cfg, device=DeviceFacts.from_catalog("A100-80GB", "A100-SXM4-80GB"))
    assert not any("bf16" in f.problem for f in a100.findings), a100.reason
    assert a100.verdict == "warn" and "deterministic algorithms are off" in a100.reason


def test_nccl_without_cuda_fails(make_cfg):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: NCCL may initialise")
    result = environment_step(make_cfg("distributed.backend=nccl"))
    assert result.verdict == "fail"
    assert result.reason.startswith("distributed.backend=nccl (nccl) does not initialise here: no CUDA device")


def test_a_target_whose_module_does_not_import_fails(make_cfg):
    result = environment_step(make_cfg("model._target_=pilot_no_such_module.Model"))
    assert result.verdict == "fail"
    assert result.reason.startswith(
        "model._target_=pilot_no_such_module.Model: module pilot_no_such_module does not import (ModuleNotFoundError"
    )
    assert any("attention was not examined" in f.problem for f in result.findings)


def test_unusual_stacks_warn(make_cfg):
    cfg = make_cfg()
    facts, _ = collect(cfg, DeviceFacts.from_catalog("H100-80GB", "H100 80GB HBM3"))
    facts["cuda"].update(runtime="12.4", driver={"version": "550.54", "cuda": "12.6"})
    facts["numerics"].update(tf32_matmul=True)
    fails, warns = judge(cfg, facts)
    assert not fails
    problems = " | ".join(w.problem for w in warns)
    assert "torch is built for CUDA 12.4 and the driver supports CUDA 12.6" in problems
    assert "deterministic algorithms are off on H100 80GB HBM3" in problems
    assert "fp32 matmuls run in TF32 on H100 80GB HBM3" in problems


# --------------------------------------------------------------------------- requirements per GPU
def test_requirements_per_catalog_gpu(make_cfg):
    catalog = load_catalog(make_cfg().rental)
    statuses = catalog_statuses(campaign_requirements("bf16"), catalog)
    assert statuses["T4-16GB"].met is False and statuses["V100-32GB"].met is False
    assert statuses["T4-16GB"].text.startswith(
        "NOT MET: bf16 autocast (precision.dtype=bf16) needs NVIDIA compute capability >= 8.0"
    )
    assert all(statuses[name].met for name in ("A10-24GB", "A100-80GB", "H100-80GB", "H200-141GB", "MI300X-192GB"))
    assert gpu_status(campaign_requirements("bf16"), None).met is None  # a GPU without a known capability
    fp8 = campaign_requirements("fp8")
    assert gpu_status(fp8, parse_capability("8.9")).met and not gpu_status(fp8, parse_capability("8.0")).met
    assert campaign_requirements("fp32") == [] == campaign_requirements("fp32", model_dtype="fp32")
    # bf16 parameters (model.dtype=bf16) without autocast: a T4 was proposed for them
    parameters = catalog_statuses(campaign_requirements("fp32", model_dtype="bf16"), catalog)
    assert parameters["T4-16GB"].met is False and "model.dtype=bf16" in parameters["T4-16GB"].text
    assert parameters["A100-80GB"].met

    masked = {"dtype": "float32", "head_dim": 16, "mask": {"dtype": "bool"}, "count": 2}
    (requirement,) = campaign_requirements("fp32", [masked])
    assert requirement.feature == "mem_efficient_attention" and not requirement.hard
    causal = {"dtype": "bfloat16", "head_dim": 64, "mask": None, "count": 12}
    flash = campaign_requirements("bf16", [causal])[1]
    assert flash.feature == "flash_attention"
    t4 = gpu_status([flash], parse_capability("7.5"))
    assert t4.met is True and t4.text.startswith("falls back: PyTorch's flash attention kernel")


# --------------------------------------------------------------------------- env_check
def test_env_check_passes_against_its_own_lock_and_journals(run_copy, tmp_path, capsys):
    journal = tmp_path / "journal.md"
    code = env_check.main([str(run_copy), "--journal", str(journal)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "env_check: pass" in out and "DIFF" not in out
    assert f"env_check ({run_copy})" in journal.read_text() and "env_check: pass" in journal.read_text()


@pytest.mark.parametrize(
    "name, line, severe",
    [
        # a dependency of the campaign the pilot had and this machine lacks
        ("removed", "pilot-phantom-dependency==1.0", True),
        # a distribution nothing in the campaign imports: reported, exit 0
        ("removed, unused", "unused-phantom-tool==2.0", False),
    ],
)
def test_env_check_reports_a_removed_distribution(run_copy, capsys, name, line, severe):
    edit_lock(run_copy, lambda text: text + line + "\n")
    if severe:
        edit_facts(run_copy, lambda f: f["campaign_distributions"].update({"pilot-phantom-dependency": "1.0"}))
    code, out, _ = run_check(run_copy, capsys)
    distribution, version = line.split("==")
    expected = f"distribution {distribution}: pilot {version}, here not installed — "
    assert (
        f"DIFF  {expected}a dependency of the campaign"
        if severe
        else f"note  {expected}not among the campaign's dependencies"
    ) in out
    assert code == (1 if severe else 0), out


def test_env_check_reports_a_campaign_module_whose_import_is_broken(run_copy, tmp_path, monkeypatch, capsys):
    """A distribution at the locked version whose import fails (a missing shared library, a damaged file)
    passed: only versions were compared. The modules the pilot had imported must import here too."""
    facts = json.loads((run_copy / "environment.json").read_text())
    assert "torch" in facts["campaign_modules"]["torch"] and "omegaconf" in facts["campaign_modules"]["omegaconf"]
    assert run_check(run_copy, capsys)[0] == 0
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "envcheck_broken_lib.py").write_text("raise ImportError('libfoo.so.1: cannot open')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    edit_facts(run_copy, lambda f: f["campaign_modules"].update({"omegaconf": ["envcheck_broken_lib", "omegaconf"]}))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1, out
    assert (
        "DIFF  distribution omegaconf: module envcheck_broken_lib: pilot imports, here does not import "
        "(ImportError: libfoo.so.1: cannot open)"
    ) in out and "pip install --force-reinstall omegaconf==" in out, out


def test_env_check_reports_a_changed_version(run_copy, capsys):
    import numpy

    edit_lock(run_copy, lambda text: text.replace(f"numpy=={numpy.__version__}\n", "numpy==1.24.0\n"))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1
    assert f"DIFF  distribution numpy: pilot 1.24.0, here {numpy.__version__} — a dependency of the campaign" in out


def test_env_check_reports_an_edit_of_pilots_own_code(run_copy, capsys):
    """A loss scaled by 10 in pilot/engine/trainer.py passed ('nothing here can change the pilot's results'):
    only the targets' files were compared, and a dirty tree was a note."""
    from pilot.closing.provenance import package_sources as pilot_sources

    code, out, _ = run_check(run_copy, capsys)
    assert code == 0 and "pilot's own files:" not in out, out
    edit_facts(run_copy, lambda f: f["pilot_sources"].update({"engine/trainer.py": "0" * 16}))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1, out
    assert "DIFF  pilot's own files: pilot " in out and "1 differ: engine/trainer.py" in out, out
    # its default configs too: conf/optim/adamw.yaml edited (lr 1e-3 -> 1e-2) passed as the same stack
    assert {"conf/optim/adamw.yaml", "hydra_plugins/pilot_sweeper/__init__.py"} <= set(pilot_sources())
    edit_facts(
        run_copy, lambda f: f["pilot_sources"].update({"engine/trainer.py": pilot_sources()["engine/trainer.py"]})
    )
    edit_facts(run_copy, lambda f: f["pilot_sources"].update({"conf/optim/adamw.yaml": "0" * 16}))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1 and "1 differ: conf/optim/adamw.yaml" in out, out
    # a pilot recorded before conf/ was: conf/ not compared (not every file said to differ)
    edit_facts(
        run_copy,
        lambda f: f.update(
            pilot_sources={
                k: v
                for k, v in f["pilot_sources"].items()
                if "/" not in k or not k.startswith(("conf/", "hydra_plugins/"))
            }
        ),
    )
    code, out, _ = run_check(run_copy, capsys)
    assert code == 0 and "pilot's own files:" not in out, out
    edit_facts(run_copy, lambda f: f.pop("pilot_sources"))  # a run recorded before the files were: said, not severe
    code, out, _ = run_check(run_copy, capsys)
    assert code == 0 and "note  pilot's own files: pilot not recorded" in out, out


def test_env_check_reports_a_different_torch(run_copy, capsys):
    edit_lock(run_copy, lambda text: text.replace(f"torch=={torch.__version__}\n", "torch==2.12.0\n"))
    edit_facts(run_copy, lambda f: f["torch"].update(version="2.12.0"))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1
    assert f"DIFF  torch: pilot 2.12.0, here {torch.__version__} — another major.minor release" in out


def test_env_check_reports_a_changed_and_a_missing_module(make_cfg, tmp_path, monkeypatch, capsys):
    package = tmp_path / "code"
    package.mkdir()
    module = package / "envcheck_probe_model.py"
    module.write_text("from pilot.models.tiny_gpt import TinyGPT as Model  # the user's model\n")
    monkeypatch.syspath_prepend(str(package))
    cfg = make_cfg("model._target_=envcheck_probe_model.Model")
    run_dir = make_run(cfg, tmp_path / "run", first_step_loss=False)
    assert run_check(run_dir, capsys)[0] == 0

    module.write_text(module.read_text() + "# edited after the pilot\n")
    code, out, _ = run_check(run_dir, capsys)
    assert code == 1 and "model._target_=envcheck_probe_model.Model: " in out and "its code differs" in out

    module.unlink()
    monkeypatch.delitem(sys.modules, "envcheck_probe_model")
    importlib.invalidate_caches()
    code, out, _ = run_check(run_dir, capsys)
    assert code == 1
    assert (
        "DIFF  model._target_=envcheck_probe_model.Model: module envcheck_probe_model: pilot imports, here "
        "does not import (ModuleNotFoundError"
    ) in out
    assert f"PYTHONPATH={package} python -m pilot.env_check" in out  # the folder it came from: no package of it
    code, out, _ = run_check(run_dir, capsys, "--smoke")
    assert code == 1 and "DIFF  smoke: pilot one update and one evaluation, here not run" in out


@pytest.mark.parametrize(
    "status, verdicts, said",
    [
        ("interrupted", None, "status interrupted, no verdict"),
        ("failed", {"environment": "pass", "tiny_subset": "fail"}, "verdicts tiny_subset: fail"),
        ("oom", {"phases": "oom"}, "verdicts phases: oom"),
    ],
)
def test_env_check_does_not_pass_against_a_pilot_that_gave_no_pass(run_copy, capsys, status, verdicts, said):
    """A pilot stopped by SIGTERM before any verdict was compared and passed ('nothing here can change the
    pilot's results', exit 0, with --smoke too); one whose verdict was oom was compared without a word."""
    record = json.loads((run_copy / "run.json").read_text())
    record.update(status=status, verdicts=verdicts)
    (run_copy / "run.json").write_text(json.dumps(record))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1 and f"DIFF  the pilot's outcome: pilot {said}" in out, out


def test_env_check_reports_the_gpu_planned(run_copy, capsys):
    if torch.cuda.is_available():
        pytest.skip("compares the plan with this machine's GPU")
    (run_copy / "memory_estimate.json").write_text(json.dumps({"chosen": {"gpu": "L4-24GB", "count": 1}}))
    code, out, _ = run_check(run_copy, capsys)
    assert code == 1 and "DIFF  GPU: pilot 1 x L4-24GB planned, here no GPU visible" in out


def test_env_check_smoke_compares_the_first_step_loss(run_copy, capsys):
    code, out, _ = run_check(run_copy, capsys, "--smoke")
    assert code == 0, out
    assert "smoke on cpu: one update" in out and "first-step loss" in out and "within" in out
    path = run_copy / "phases.csv"
    recorded = float(path.read_text().split('"loss ')[1].split(",")[0])
    path.write_text(path.read_text().replace(f'"loss {recorded:.4g},', f'"loss {recorded * 1.05:.4g},'))
    code, out, _ = run_check(run_copy, capsys, "--smoke")
    assert code == 1 and "DIFF  first-step loss: pilot" in out and "compute something else here" in out


def test_env_check_smoke_demands_bit_identity_on_the_same_device_torch_and_threads(tmp_path, capsys):
    """The seed changed by one moved the first-step loss by 0.1%, inside the rtol 1e-3 declared for
    another device, and passed on the pilot's own machine, where the update is bit for bit the same."""
    cfg = compose_config(["run.threads=1"])
    run = make_run(cfg, tmp_path / "run", first_step_loss=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runner = PhaseRunner(cfg, instantiate(cfg.data, _convert_="all"), torch.device("cpu"), run)
        runner.build_model()
        loss = runner.trainer.train_step().loss
    finally:
        torch.set_num_threads(threads)
    record = json.loads((run / "run.json").read_text())
    record.update(first_step_loss=loss, threads={"count": 1})
    (run / "run.json").write_text(json.dumps(record))
    code, out, _ = run_check(run, capsys, "--smoke")
    assert code == 0 and "rtol 0, the same device, torch and thread count: bit-identical" in out, out
    record["first_step_loss"] = loss * (1 + 1e-5)  # far inside the rtol declared for another device
    (run / "run.json").write_text(json.dumps(record))
    code, out, _ = run_check(run, capsys, "--smoke")
    assert code == 1 and "DIFF  first-step loss" in out, out


def test_env_check_refuses_bad_arguments_with_exit_2(run_copy, tmp_path, capsys):
    assert run_check(tmp_path / "nowhere", capsys)[0] == 2
    (tmp_path / "a-file").write_text("")  # said as a file ('no such directory', before)
    code, _, err = run_check(tmp_path / "a-file", capsys)
    assert code == 2 and "a-file: a file, not a directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_check(empty, capsys)
    assert code == 2 and "holds no environment.json and no requirements.lock" in err
    code, _, err = run_check(run_copy, capsys, "--rtol", "-1")
    assert code == 2 and "--rtol -1.0: must be a finite number >= 0" in err
    edit_lock(run_copy, lambda text: text + "not a requirement line\n")
    code, _, err = run_check(run_copy, capsys)
    assert code == 2 and "is not 'name==version'" in err
    with pytest.raises(LockUnreadable):
        read_lock(run_copy / LOCK_FILE)
    with pytest.raises(SystemExit) as exit_info:
        env_check.main(["--no-such-option"])
    assert exit_info.value.code == 2


def _env_check_command(run_dir: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m pilot.env_check <run_dir>`` in a new process (``pythonpath`` first on its path)."""
    env = {**os.environ, "PYTHONPATH": f"{pythonpath}{os.pathsep}{REPO_ROOT}"} if pythonpath else None
    command = [sys.executable, "-m", "pilot.env_check", str(run_dir)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, env=env)


def test_env_check_command_line_exit_code_without_traceback(tmp_path):
    completed = _env_check_command(tmp_path / "nowhere")
    assert completed.returncode == 2
    assert "no such directory" in completed.stderr and "Traceback" not in completed.stderr


def test_env_check_refuses_a_facts_file_emptied_inside_without_a_traceback(run_copy, capsys):
    edit_facts(run_copy, lambda f: f.update(python={}))  # a KeyError traceback before
    code, _, err = run_check(run_copy, capsys)
    assert code == 2 and "environment.json has no 'python.version' as the environment step writes it" in err, err
    edit_facts(run_copy, lambda f: f.update(python={"version": "3.11.7"}, cuda=7))
    code, _, err = run_check(run_copy, capsys)
    assert code == 2 and "has no 'cuda' as the environment step writes it" in err, err


def test_env_check_on_a_machine_missing_one_of_pilots_dependencies_says_so(tmp_path):
    """safetensors (or hydra, numpy, omegaconf...) missing here was an import traceback."""
    hidden = tmp_path / "hide" / "safetensors"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named safetensors", name="safetensors")\n'
    )
    completed = _env_check_command(tmp_path / "nowhere", pythonpath=tmp_path / "hide")
    assert completed.returncode == 1 and "Traceback" not in completed.stderr, completed.stderr
    assert "DIFF  pilot's own dependency safetensors: pilot imports, here does not import" in completed.stdout


def test_the_first_step_loss_is_read_at_full_precision_where_the_pilot_records_it(run_copy):
    _, half_digit, source = env_check.recorded_first_step_loss(env_check.load_run(run_copy))
    assert 0 < half_digit <= 0.005 and source.startswith("phases.csv first_step")  # "loss 5.574": 4 digits
    (run_copy / "phases.csv").write_text(
        "phase,device,rank,duration_s,verdict,detail,loss\n"
        'first_step,cpu,0,0.9,pass,"loss 5.574, 0.9 s",5.574102152173764\n'
    )
    assert env_check.recorded_first_step_loss(env_check.load_run(run_copy)) == (
        5.574102152173764,
        0.0,
        "phases.csv loss column",
    )


def test_driver_and_cuda_rules_follow_cudas_compatibility_and_missing_libraries():
    from pilot.env_check.compare_stack import _compare_cuda, _compare_driver

    older_minor = _compare_driver({"version": "535", "cuda": "12.2"}, {"version": "535", "cuda": "12.2"}, "12.6")
    (line,) = older_minor  # severe before, though the pilot passed on that very driver
    assert (
        not line.severe
        and "minor-version compatibility" in line.affects
        and "the pilot ran on the same" in line.affects
    )
    (major,) = _compare_driver({}, {"version": "470", "cuda": "11.4"}, "12.6")
    assert major.severe and "another major CUDA" in major.affects
    assert _compare_driver({}, {"version": "560", "cuda": "12.6"}, "12.6") == []
    pilot = {"runtime": "12.6", "cudnn": "9.5.1", "nccl": "2.21.5"}
    missing = _compare_cuda(pilot, {"runtime": "12.6", "cudnn": None, "nccl": None}, multi_gpu=True)
    assert [(d.what, d.here, d.severe) for d in missing] == [
        ("cuDNN", "not available", True),
        ("NCCL", "not available", True),
    ]


def test_a_sequence_too_long_for_this_host_is_examined_and_estimated_without_allocating_it(
    make_cfg, tmp_path, monkeypatch
):
    """python -m pilot data.max_len=100000: the attention examination ran a real forward at 100,000 tokens and
    the estimate step measured its 756 GiB estimate on real tensors; the process grew until the host swapped and
    it was killed, run.json left "running". Both now see what the host has free first: the attention calls are
    recorded on the meta device, and the estimate is written unmeasured, a warning saying why."""
    from hydra.utils import instantiate

    import pilot.environment.attention as attention
    import pilot.estimate_run as estimate_run
    from pilot.environment.attention import attention_facts
    from pilot.estimate_run import estimate_step

    cfg = make_cfg("data.max_len=256")
    task = instantiate(cfg.data, _convert_="all")
    facts = attention_facts(cfg, task, torch.device("cpu"))
    assert facts["examined"] and "meta device" not in facts["shapes_from"], facts["shapes_from"]
    monkeypatch.setattr(attention, "free_bytes", lambda device: 1_000_000)  # a host with 1 MB free
    facts = attention_facts(cfg, task, torch.device("cpu"))
    assert facts["examined"] and facts["calls"] and "on the meta device, nothing allocated" in facts["shapes_from"]
    monkeypatch.setattr(estimate_run, "free_bytes", lambda device: 1_000_000)
    result = estimate_step(cfg, task, tmp_path, [])
    assert result.verdict == "warn" and "not checked against a measurement" in result.reason, result.reason
    assert "1000 KiB free on cpu" in result.reason or "free on cpu" in result.reason, result.reason
    assert "not measured: its peak" in (tmp_path / "choice_sheet.md").read_text()
