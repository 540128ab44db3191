"""Closing a run: export, reload in a fresh process, rerun control inputs, archive.

``close_run`` exports the artefact meant for evaluation (safetensors weights +
resolved config), records the outputs of fixed control inputs (the first
validation examples) *before* export, then starts a new Python process
(``python -m pilot.closing <export dir>``) that rebuilds the model from the
exported config, loads the weights through safetensors, reruns the control
inputs and compares: exact on CPU fp32, ``closing.rtol/atol`` otherwise.
The run directory keeps the artefact, the resolved config, the code revision
(run.json), the raw metrics and ``REPRODUCE.md``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from pilot.checkpoint import export_artefact
from pilot.data.task import TaskData, move_to

CONTROL_FILE = "control.safetensors"


@torch.no_grad()
def control_outputs(model: torch.nn.Module, task: TaskData, cfg: DictConfig) -> Dict[str, torch.Tensor]:
    """Inputs (the collated control batch) and the model's outputs on them, as plain tensors."""
    items = task.encoded("val")[: int(cfg.closing.control_examples)] or \
        task.encoded("train")[: int(cfg.closing.control_examples)]
    batch = task.collate(items)
    model.eval()
    device = next(model.parameters()).device
    output = task.forward(model, move_to(batch, device))
    tensors = {f"input.{k}": v.contiguous() for k, v in batch.items() if torch.is_tensor(v)}
    tensors["output"] = output.detach().float().cpu().contiguous()
    return tensors


def export_with_controls(model: torch.nn.Module, task: TaskData, cfg: DictConfig, directory: Path) -> Path:
    directory = Path(directory)
    weights = export_artefact(model, cfg, directory)
    save_file(control_outputs(model, task, cfg), str(directory / CONTROL_FILE))
    return weights


def reload_and_compare(directory: Path) -> Dict[str, Any]:
    """Runs in the fresh process: rebuild, load safetensors weights, rerun, compare."""
    directory = Path(directory)
    cfg = OmegaConf.load(directory / "config.yaml")
    task = instantiate(cfg.data, _convert_="all")
    model = instantiate(cfg.model, _convert_="all")
    missing, unexpected = model.load_state_dict(load_file(str(directory / "model.safetensors")), strict=False)
    if missing or unexpected:
        return {"verdict": "fail", "reason": f"weights do not fit the model: missing {missing}, unexpected {unexpected}"}
    recorded = load_file(str(directory / CONTROL_FILE))
    batch = {k[len("input."):]: v for k, v in recorded.items() if k.startswith("input.")}
    model.eval()
    with torch.no_grad():
        output = task.forward(model, batch).detach().float()
    rtol, atol = float(cfg.closing.rtol), float(cfg.closing.atol)
    expected = recorded["output"]
    difference = (output - expected).abs().max().item() if output.shape == expected.shape else float("inf")
    exact = rtol == 0 and atol == 0
    matches = torch.equal(output, expected) if exact else torch.allclose(output, expected, rtol=rtol, atol=atol)
    rule = "bit-identical" if exact else f"within rtol={rtol}, atol={atol}"
    return {"verdict": "pass" if matches else "fail",
            "reason": (f"reloaded export reproduces {expected.shape[0]} control outputs {rule}"
                       if matches else f"reloaded export differs on the control inputs: max |diff| = "
                                       f"{difference:.3g}, required {rule}"),
            "max_abs_difference": difference}


def check_in_new_process(directory: Path, timeout_s: int = 600) -> Dict[str, Any]:
    completed = subprocess.run([sys.executable, "-m", "pilot.closing", str(directory)],
                               capture_output=True, text=True, timeout=timeout_s)
    result_path = Path(directory) / "reload_check.json"
    if completed.returncode != 0 or not result_path.exists():
        return {"verdict": "fail", "reason": "the reload process failed: "
                + (completed.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(result_path.read_text())


def write_reproduce(run_dir: Path, record: Dict[str, Any]) -> Path:
    revision = record.get("code_revision") or {}
    overrides = " ".join(record.get("overrides") or [])
    dirty = " (the tree had uncommitted changes: they are not in this commit)" if revision.get("dirty") else ""
    text = f"""# Reproduce run {record.get('run_id')}

Code: commit `{revision.get('commit')}`{dirty}.

```bash
git checkout {revision.get('commit')}
pip install "torch==2.13.0" -e ".[test]"
python -m pilot {overrides}
```

Seed {record.get('seed')} is part of the config; the resolved config is `config.yaml`
(and `export/config.yaml`). Raw metrics: `metrics.jsonl`. Evaluation artefact:
`export/model.safetensors`; the rerun of its control inputs: `export/reload_check.json`
(`python -m pilot.closing export` repeats it).
"""
    path = Path(run_dir) / "REPRODUCE.md"
    path.write_text(text)
    return path


def close_run(model: torch.nn.Module, task: TaskData, cfg: DictConfig, run_dir: Path) -> Dict[str, Any]:
    export_dir = Path(run_dir) / "export"
    export_with_controls(model, task, cfg, export_dir)
    return check_in_new_process(export_dir)


def main() -> None:
    directory = Path(sys.argv[1])
    result = reload_and_compare(directory)
    (directory / "reload_check.json").write_text(json.dumps(result, indent=2))
    print(result["reason"])


if __name__ == "__main__":
    main()
