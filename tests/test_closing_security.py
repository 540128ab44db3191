"""The closing never runs code named in a file: exported configs and checkpoints are checked first.

Marker-file technique: every tampered file would, if it ran, create ``marker`` or touch
``victim`` in the test's own directory; each test asserts neither happened.
"""

import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import compose_config
from omegaconf import OmegaConf
from safetensors.torch import load_file, save_file

import pilot.closing.reload as closing
from pilot.checkpoint import UnsafeCheckpointError, latest_valid_checkpoint, safe_load
from pilot.closing import (
    EXPORT_FILES,
    ExportConfigRefused,
    check_in_new_process,
    export_with_controls,
    reload_and_compare,
    run_policy,
)
from pilot.engine.build import build_trainer
from pilot.run_record import config_hash

REPO = Path(__file__).resolve().parents[1]
OVERRIDES = ["+experiment=classification"]


class RunsShell:
    """Unpickling it runs ``command`` (``os.system``): what an attacker's pickle does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A run directory as ``mode=train`` leaves it: config.yaml, run.json, export/."""
    cfg = compose_config(OVERRIDES)
    trainer = build_trainer(cfg)
    trainer.train_step()
    run_dir = tmp_path_factory.mktemp("run")
    export_with_controls(trainer.raw_model, trainer.task, cfg, run_dir / "export")
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    (run_dir / "run.json").write_text(json.dumps({"config_hash": config_hash(cfg)}))
    return run_dir


@pytest.fixture
def run_dir(exported, tmp_path):
    """A private copy of the run, plus a victim file an attack would delete or truncate."""
    copy = tmp_path / "run"
    shutil.copytree(exported, copy)
    (tmp_path / "victim.txt").write_text("precious")
    return copy


def tamper(export_dir: Path, key: str, value) -> None:
    """Set ``key`` (dotted) of the export's config.yaml to ``value``, as an attacker would."""
    path = export_dir / "config.yaml"
    cfg = OmegaConf.load(path)
    OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    OmegaConf.save(cfg, path)


def reload_cli(export_dir: Path, *args: str, env_extra=None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "pilot.closing", str(export_dir), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def attacks(tmp_path: Path):
    """(name, ``data`` node) pairs: each would create the marker or damage the victim."""
    marker, victim = tmp_path / "marker", tmp_path / "victim.txt"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(RunsShell(f"touch {marker}")))
    return {
        "torch.load": {"_target_": "torch.load", "f": str(evil), "weights_only": False},
        "builtins.open": {"_target_": "builtins.open", "file": str(victim), "mode": "w"},
        "subprocess.run": {"_target_": "subprocess.run", "args": ["touch", str(marker)]},
        "subprocess.Popen": {"_target_": "subprocess.Popen", "args": ["touch", str(marker)]},
        "os.system": {"_target_": "os.system", "command": f"touch {marker}"},
        "os.remove": {"_target_": "os.remove", "path": str(victim)},
    }


def assert_nothing_ran(tmp_path: Path) -> None:
    assert not (tmp_path / "marker").exists()
    assert (tmp_path / "victim.txt").read_text() == "precious"


@pytest.fixture
def nothing_built(monkeypatch):
    """Fail the test if the reload builds anything (data or model) before it refuses."""

    def refuse(*args, **kwargs):
        raise AssertionError("instantiate was called before the config was refused")

    monkeypatch.setattr(closing, "instantiate", refuse)


# --------------------------------------------------------------------------- item 11: targets
@pytest.mark.parametrize(
    "target", ["torch.load", "builtins.open", "subprocess.run", "subprocess.Popen", "os.system", "os.remove"]
)
def test_tampered_target_is_refused_by_hand_and_never_runs(run_dir, tmp_path, target):
    export = run_dir / "export"
    tamper(export, "data", attacks(tmp_path)[target])
    completed = reload_cli(export)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert f"data._target_ = {target}" in completed.stderr
    assert "Traceback" not in completed.stderr
    result = json.loads((export / "reload_check.json").read_text())
    assert result["verdict"] == "fail" and result["refused"] and "data._target_" in result["reason"]
    assert_nothing_ran(tmp_path)


def test_parent_process_gives_the_child_the_run_config(run_dir, tmp_path):
    cfg = compose_config(OVERRIDES)
    export = run_dir / "export"
    (export / "reload_check.json").write_text(json.dumps({"verdict": "pass", "reason": "stale"}))
    (run_dir / "run.json").unlink()  # the parent's own config is the reference, not the directory's
    tamper(export, "data", attacks(tmp_path)["torch.load"])
    result = check_in_new_process(export, cfg)
    assert result["verdict"] == "fail" and result["refused"]
    assert "data._target_ = torch.load" in result["reason"] and "stale" not in result["reason"]
    assert_nothing_ran(tmp_path)


@pytest.mark.parametrize(
    "key, node",
    [
        ("model._args_", [{"_target_": "pilot.data.instructions.make_task"}]),  # positional args
        ("model.layers", [1, {"inner": {"_target_": "os.system", "command": "touch x"}}]),  # inside a list
        ("data.split.hook", {"_target_": "subprocess.run", "_partial_": True}),  # partial, deep
        ("optim.scheduler", {"_target_": "pilot.data.digits.make_task"}),  # a pilot target, wrong key
    ],
)
def test_a_target_at_any_depth_is_refused_naming_its_key(run_dir, nothing_built, key, node):
    export = run_dir / "export"
    tamper(export, key, node)
    with pytest.raises(ExportConfigRefused) as refused:
        reload_and_compare(export, run_policy(export))
    named = {
        "model._args_": "model._args_[0]._target_",
        "model.layers": "model.layers[1].inner._target_",
        "data.split.hook": "data.split.hook._target_",
        "optim.scheduler": "optim.scheduler._target_",
    }[key]
    assert f"{named} = " in str(refused.value)


@pytest.mark.parametrize(
    "target",
    [
        "os.system",
        "pilot.run_record.subprocess.run",
        "torch.serialization.load",
        "pilot.data.digits.__builtins__",
        "builtins.eval",
    ],
)
def test_code_running_targets_are_refused_even_when_allowed(run_dir, nothing_built, target):
    export = run_dir / "export"
    tamper(export, "data._target_", target)
    with pytest.raises(ExportConfigRefused, match="never instantiated, even when allowed") as refused:
        reload_and_compare(export, run_policy(export, allowed_targets=[target]))
    assert f"data._target_ = {target}" in str(refused.value)


def test_allow_target_on_the_command_line(run_dir, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "trusted_tasks.py").write_text(
        "from pilot.data.digits import make_task as digits\n\n"
        "def make_task(**settings):\n    return digits(**settings)\n"
    )
    export, env = run_dir / "export", {"PYTHONPATH": str(plugins)}
    tamper(export, "data._target_", "trusted_tasks.make_task")
    refused = reload_cli(export, env_extra=env)
    assert refused.returncode == 2 and "--allow-target trusted_tasks.make_task" in refused.stderr
    allowed = reload_cli(export, "--allow-target", "trusted_tasks.make_task", env_extra=env)
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert "bit-identical" in allowed.stdout
    tamper(export, "data", attacks(tmp_path)["os.system"])
    blocked = reload_cli(export, "--allow-target", "os.system")  # allowed, and still never instantiated
    assert blocked.returncode == 2 and "never instantiated, even when allowed" in blocked.stderr
    assert_nothing_ran(tmp_path)


def test_a_dotted_key_cannot_hide_a_target(run_dir, nothing_built):
    export = run_dir / "export"
    genuine = OmegaConf.load(export / "config.yaml").model._target_
    tamper(export, "model._target_", "pilot.data.instructions.make_task")
    with (export / "config.yaml").open("a") as handle:  # a literal key "model._target_" after model
        handle.write(f'"model._target_": {genuine}\n')
    with pytest.raises(ExportConfigRefused, match=r"both named model\._target_"):
        reload_and_compare(export, run_policy(export))


def test_a_changed_value_is_refused_naming_the_key(run_dir, nothing_built):
    export = run_dir / "export"
    tamper(export, "closing.atol", 1.0e9)  # would let any weights pass the reload check
    with pytest.raises(ExportConfigRefused, match=r"closing\.atol: 1000000000\.0 here, 0\.0 in the reference"):
        reload_and_compare(export, run_policy(export))


def test_an_interpolation_is_refused(run_dir, nothing_built):
    export = run_dir / "export"
    (export / "config.yaml").write_text(
        (export / "config.yaml")
        .read_text()
        .replace("by: group", "by: \"${oc.decode:'{_target_: os.system, command: touch x}'}\"")
    )
    with pytest.raises(ExportConfigRefused, match=r"holds interpolations.*data\.split\.by = "):
        reload_and_compare(export, run_policy(export))


def test_run_config_must_match_run_json(run_dir, nothing_built):
    export = run_dir / "export"
    for path in (run_dir / "config.yaml", export / "config.yaml"):  # both edited alike
        cfg = OmegaConf.load(path)
        cfg.closing.atol = 1.0e9
        OmegaConf.save(cfg, path)
    policy = run_policy(export)
    assert policy.reference is None and "run.json's config_hash" in policy.unverified
    with pytest.raises(ExportConfigRefused, match=r"model\._target_ = .*run\.json's config_hash"):
        reload_and_compare(export, policy)
    (run_dir / "run.json").unlink()
    assert "no run.json" in run_policy(export).unverified


def test_pilot_layout_without_config_yaml_checks_the_export_hash(run_dir, nothing_built):
    rank_dir = run_dir / "export" / "rank0"  # mode=pilot: <run>/export/rank<r>, no <run>/config.yaml
    rank_dir.mkdir()
    for name in EXPORT_FILES:
        shutil.move(str(run_dir / "export" / name), rank_dir / name)
    (run_dir / "config.yaml").unlink()
    assert run_policy(rank_dir).reference is not None
    tamper(rank_dir, "model.hidden", 4)
    assert "run.json's config_hash" in run_policy(rank_dir).unverified


# --------------------------------------------------------------------------- item 12: exit status
def test_exit_status_gates_on_the_verdict(run_dir):
    export = run_dir / "export"
    passed = reload_cli(export)
    assert passed.returncode == 0, passed.stderr[-2000:]
    weights = load_file(str(export / "model.safetensors"))
    name = list(weights)[-1]  # the output layer's bias: it reaches every control output
    weights[name] = weights[name].clone()
    weights[name].view(-1)[0] += 1e-3
    save_file(weights, str(export / "model.safetensors"))
    failed = reload_cli(export)
    assert failed.returncode == 1 and "differs on the control inputs" in failed.stdout
    assert json.loads((export / "reload_check.json").read_text())["verdict"] == "fail"
    missing = reload_cli(run_dir / "nowhere")
    assert missing.returncode == 2 and "nowhere: no such directory" in missing.stderr


def test_a_damaged_export_is_a_fail_verdict_without_traceback(run_dir):
    export = run_dir / "export"
    assert reload_cli(export).returncode == 0
    with open(export / "model.safetensors", "r+b") as weights:
        weights.truncate(1000)
    damaged = reload_cli(export)
    assert damaged.returncode == 1 and "Traceback" not in damaged.stderr, damaged.stderr[-2000:]
    assert "could not be reloaded" in damaged.stderr
    assert json.loads((export / "reload_check.json").read_text())["verdict"] == "fail"


def test_trusted_caller_without_policy_still_refuses_code(run_dir, tmp_path, nothing_built):
    export = run_dir / "export"
    tamper(export, "data", attacks(tmp_path)["os.system"])
    with pytest.raises(ExportConfigRefused, match=r"data\._target_ = os\.system"):
        reload_and_compare(export)


# --------------------------------------------------------------------------- item 12: safe_load
INST_PICKLE = b"(S'touch {marker}'\nios\nsystem\n."  # protocol 0: INST builds os.system(...)


def torch_zip_with(data_pkl: bytes, path: Path) -> Path:
    """A genuine torch.save zip whose data.pkl is replaced by ``data_pkl``."""
    genuine = path.with_suffix(".genuine")
    torch.save({"format": "pilot-checkpoint-v1", "t": torch.ones(2)}, genuine)
    with zipfile.ZipFile(genuine) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, data_pkl if item.filename.endswith("data.pkl") else data)
    genuine.unlink()
    return path


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch's note on protocol 5
@pytest.mark.parametrize("kind", ["inst_raw", "inst_in_zip", "global_in_zip", "raw_pickle_p2", "raw_pickle_p5"])
def test_code_in_a_checkpoint_is_reported_unsafe_and_never_runs(tmp_path, kind):
    marker = tmp_path / "marker"
    inst = INST_PICKLE.replace(b"{marker}", str(marker).encode())
    path = tmp_path / "ckpt-00000001.pt"
    if kind == "inst_raw":
        path.write_bytes(inst)
    elif kind == "inst_in_zip":
        torch_zip_with(inst, path)
    elif kind == "global_in_zip":
        torch.save({"format": "pilot-checkpoint-v1", "payload": RunsShell(f"touch {marker}")}, path)
    else:
        path.write_bytes(pickle.dumps({"model": RunsShell(f"touch {marker}")}, protocol=int(kind[-1])))
    with pytest.raises(UnsafeCheckpointError, match="is unsafe.*(os|posix)\\.system.*refused") as refused:
        safe_load(path)
    assert "corrupt" not in str(refused.value)
    with pytest.raises(UnsafeCheckpointError):
        latest_valid_checkpoint(tmp_path)  # refused outright, never skipped for an older one
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "truncated_pickle_in_zip"])
def test_a_broken_checkpoint_is_corrupt_not_unsafe(tmp_path, damage):
    path = tmp_path / "ckpt-00000002.pt"
    torch.save({"format": "pilot-checkpoint-v1", "model": {"w": torch.ones(64)}}, path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(random.Random(0).randbytes(4096))
    else:  # the zip is intact, its pickle stops half-way (it names only torch's own globals)
        with zipfile.ZipFile(path) as archive:
            data_pkl = next(archive.read(n) for n in archive.namelist() if n.endswith("data.pkl"))
        torch_zip_with(data_pkl[: len(data_pkl) // 2], path)
    with pytest.raises(ValueError, match="is corrupt") as error:
        safe_load(path)
    assert not isinstance(error.value, UnsafeCheckpointError)


def test_a_path_that_is_not_an_export_is_said_as_what_it_is(tmp_path):
    """A run directory given for its export, a file, nothing at all: each said with its fix ('not a pilot
    export', listing every file, for all three before)."""
    from pilot.closing.reload import refuse_not_an_export
    from pilot.errors import PilotError

    run = tmp_path / "run"
    (run / "export").mkdir(parents=True)
    for name in ("config.yaml", "model.safetensors", "control.safetensors"):
        (run / "export" / name).write_text("")
    (tmp_path / "file").write_text("")
    for path, said in (
        (run, f"is a run directory, not its export. Fix: {run / 'export'}"),
        (tmp_path / "file", "a file, not a directory"),
        (tmp_path / "nothing", "no such directory"),
    ):
        with pytest.raises(PilotError, match=re.escape(said)):
            refuse_not_an_export(path)
    refuse_not_an_export(run / "export")  # the export itself: nothing to say


def test_a_partial_is_judged_by_what_it_calls(tmp_path, monkeypatch):
    """``make_task = functools.partial(builder, ...)`` in a task module is a task's factory like any
    other (its reload_check failed as 'resolves to functools'); a partial of ``os.system`` is still
    refused: what a partial runs is its ``func``."""
    from pilot.closing.blocked_targets import resolves_to_code

    (tmp_path / "partial_targets.py").write_text(
        "import functools, os\n"
        "from pilot.data.digits import make_task as digits\n\n"
        "make_task = functools.partial(digits, num_classes=10)\n"
        "nested = functools.partial(functools.partial(digits), in_features=64)\n"
        "shell = functools.partial(os.system, 'true')\n"
        "deeper = functools.partial(shell)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolves_to_code("partial_targets.make_task") is None
    assert resolves_to_code("partial_targets.nested") is None
    assert resolves_to_code("partial_targets.shell") == "posix"
    assert resolves_to_code("partial_targets.deeper") == "posix"


def test_weights_holding_nan_are_not_exported(make_cfg, tmp_path):
    """A model its training left NaN was exported (the pilot's export passed), and the reload then 'differed
    on the control inputs: max |diff| = nan'."""
    cfg = make_cfg(*OVERRIDES)
    trainer = build_trainer(cfg)
    with torch.no_grad():
        next(trainer.raw_model.parameters()).fill_(float("nan"))
    with pytest.raises(ValueError, match="refusing to export: non-finite values in 1 tensor"):
        export_with_controls(trainer.raw_model, trainer.task, cfg, tmp_path / "export")
    assert not (tmp_path / "export").exists()
