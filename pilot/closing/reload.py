"""Reload in a fresh process: check the exported config, rebuild the model, load the safetensors weights,
rerun the control inputs and compare (exact on CPU fp32, ``closing.rtol/atol`` otherwise)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file

from pilot.child_process import JobRunner, NewProcess
from pilot.closing.export import ADAPTER_EXPORT_FILES, CONTROL_FILE, export_files
from pilot.closing.export_config import ReloadPolicy, flatten, load_export_config, read_config
from pilot.data.task import logits_of
from pilot.engine.build import build_model
from pilot.errors import INCOMPLETE, PilotError, stopped_by, write_failure
from pilot.models.adapter import is_adapted, load_adapter, load_into_adapted, wants_adapter
from pilot.weights_file import read_weights

RESULT_FILE = "reload_check.json"
ERROR_FILE = "reload_check.error.txt"  # the reload process's output when it gave no verdict
NOT_WRITTEN = "pilot.closing: the verdict could not be written to reload_check.json: "  # then its JSON, on stderr


def reload_and_compare(directory: Path, policy: ReloadPolicy | None = None) -> dict[str, Any]:
    """Runs in the fresh process: check the config, rebuild, load safetensors weights, rerun, compare.

    ``policy`` None: the caller vouches for the directory (it has just written it); the config
    is still refused for interpolations and code-running targets.
    """
    directory = Path(directory)
    refuse_not_an_export(directory)
    if policy is None:
        policy = ReloadPolicy(flatten(read_config(directory / "config.yaml")), "the caller's")
    cfg = load_export_config(directory, policy)
    task = instantiate(cfg.data, _convert_="all")
    model, problem = _rebuild(cfg, directory, adapted=export_files(directory) == ADAPTER_EXPORT_FILES)
    if problem:
        return {"verdict": "fail", "reason": problem}
    recorded = load_file(str(directory / CONTROL_FILE))
    # fresh (aligned) copies: tensors read from a file may sit at offsets that make MKL take another
    # path through the same matmul, and the comparison is bit for bit
    batch = {k[len("input.") :]: v.clone() for k, v in recorded.items() if k.startswith("input.")}
    model.eval()
    with torch.no_grad():
        output = logits_of(task.forward(model, batch)).detach().float()
    rtol, atol = float(cfg.closing.rtol), float(cfg.closing.atol)
    expected = recorded["output"]
    difference = (output - expected).abs().max().item() if output.shape == expected.shape else float("inf")
    exact = rtol == 0 and atol == 0
    matches = torch.equal(output, expected) if exact else torch.allclose(output, expected, rtol=rtol, atol=atol)
    rule = "bit-identical" if exact else f"within rtol={rtol}, atol={atol}"
    return {
        "verdict": "pass" if matches else "fail",
        "reason": (
            f"reloaded export reproduces {expected.shape[0]} control outputs {rule}"
            if matches
            else f"reloaded export differs on the control inputs: max |diff| = {difference:.3g}, required {rule}"
        ),
        "max_abs_difference": difference,
    }


def _rebuild(cfg: DictConfig, directory: Path, adapted: bool) -> tuple[torch.nn.Module, str | None]:
    """The exported model, rebuilt: the whole model and its weights, or the base and the adapter
    (``PeftModel.from_pretrained``) after proving the base is the one it was trained on."""
    if adapted and not wants_adapter(cfg):  # the model's own factory adapts it (get_peft_model in its _target_)
        model = build_model(cfg)
        if not is_adapted(model):
            return None, "the export holds an adapter but the model's _target_ builds no adapted model"
        return load_into_adapted(model, cfg, directory)
    if adapted != wants_adapter(cfg):
        return (
            None,
            f"the export holds a whole model but its config says adapter._target_={cfg.adapter.get('_target_')}",
        )
    if adapted:
        return load_adapter(build_model(cfg, adapter=False), cfg, directory)
    model = build_model(cfg)
    missing, unexpected = model.load_state_dict(read_weights(directory / "model.safetensors"), strict=False)
    if missing or unexpected:
        return model, f"weights do not fit the model: missing {missing}, unexpected {unexpected}"
    return model, None


def check_in_new_process(
    directory: Path, cfg: DictConfig, timeout_s: int = 600, runner: JobRunner | None = None
) -> dict[str, Any]:
    """Reload ``directory`` in a fresh process that may only instantiate what ``cfg`` (the run's
    own config, written to a private file for it) holds; the verdict comes back in RESULT_FILE.
    ``runner``: a process started for it (default) or one started earlier, holding none of the
    run's state (``pilot.child_process``)."""
    directory = Path(directory)
    result_path, error_path = directory / RESULT_FILE, directory / ERROR_FILE
    result_path.unlink(missing_ok=True)  # never read an earlier run's verdict
    error_path.unlink(missing_ok=True)  # nor leave an earlier attempt's failure beside this one's verdict
    with tempfile.TemporaryDirectory(prefix="pilot-reload-") as private:
        reference = Path(private) / "config.yaml"
        OmegaConf.save(cfg, reference, resolve=True)
        # the parent's CPU thread count: another count changes the float reduction order, and the
        # comparison is bit for bit on CPU fp32
        completed = (runner or NewProcess()).run(
            "pilot.closing",
            [str(directory), "--reference-config", str(reference), "--threads", str(torch.get_num_threads())],
            timeout_s,
        )
    if not result_path.exists() and (unwritten := _unwritten_verdict(completed.stderr)) is not None:
        return unwritten  # checked, its file full: the verdict as the reload process gave it
    if not result_path.exists():
        killed = stopped_by(completed.returncode) is not None  # nothing was checked: not a failed reload
        return {
            "verdict": INCOMPLETE if killed else "fail",
            "reason": "the reload process failed: "
            + write_failure(error_path, completed.stderr, completed.returncode)
            + (f"; by hand: python -m pilot.closing {directory}" if killed else ""),
        }
    return json.loads(result_path.read_text())


def _unwritten_verdict(output: str) -> dict[str, Any] | None:
    """The verdict the reload process gave on stderr when it could not write RESULT_FILE (a full disk), with
    that said in its reason; None when it gave none."""
    for line in reversed(output.splitlines()):
        if line.startswith(NOT_WRITTEN):
            why, _, text = line.removeprefix(NOT_WRITTEN).partition(": ")
            try:
                verdict = json.loads(text)
            except ValueError:
                return None
            if isinstance(verdict, dict) and isinstance(verdict.get("reason"), str) and "verdict" in verdict:
                return {**verdict, "reason": f"{verdict['reason']} (not kept in {RESULT_FILE}: {why})"}
    return None


def refuse_not_an_export(directory: Path) -> None:
    """A path that is not an export: said with what it is (missing, a file, a run directory) and the fix."""
    expected_files = export_files(directory)
    absent = [name for name in expected_files if not (directory / name).is_file()]
    if not directory.is_dir():
        raise PilotError(
            f"{directory}: {'a file, not a directory' if directory.exists() else 'no such directory'}. Fix: a "
            "training run's export directory (<run>/export)"
        )
    if absent and all((directory / "export" / name).is_file() for name in expected_files):
        raise PilotError(f"{directory} is a run directory, not its export. Fix: {directory / 'export'}")
    if absent:
        raise PilotError(
            f"{directory} is not a pilot export: {', '.join(absent)} missing "
            f"(an export holds {', '.join(expected_files)}; a training run's is <run>/export)"
        )
