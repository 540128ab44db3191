"""The export meant for evaluation: safetensors weights and the resolved config (``export_artefact``),
with the outputs of fixed control inputs (the first validation examples) recorded *before* export."""

from __future__ import annotations

import os
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import save_file

from pilot.checkpoint import TMP_MARK, WEIGHTS_FILE, tensor_bytes
from pilot.checkpoint_checks import non_finite_tensors
from pilot.data.task import TaskData, logits_of, move_to
from pilot.errors import disk_full_guard
from pilot.models.adapter import ADAPTER_CONFIG, ADAPTER_FILES, export_adapter, is_adapted
from pilot.weights_file import write_weights

CONTROL_FILE = "control.safetensors"
EXPORT_FILES = ("config.yaml", "model.safetensors", CONTROL_FILE)
ADAPTER_EXPORT_FILES = ("config.yaml", *ADAPTER_FILES, CONTROL_FILE)  # an adapter run's: the adapter alone


def export_artefact(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> Path:
    """Weights (safetensors, contiguous CPU tensors, shared ones once) and the resolved config; for an
    adapted model the adapter alone (``models.adapter.export_adapter``). Returns the weights file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if is_adapted(model):  # the adapter alone, in peft's format, and the base's identity
        (directory / WEIGHTS_FILE).unlink(missing_ok=True)
        weights = export_adapter(model, cfg, directory)
    else:
        for name in ADAPTER_FILES:
            (directory / name).unlink(missing_ok=True)
        weights = directory / WEIGHTS_FILE
        tmp = directory / f"{WEIGHTS_FILE}{TMP_MARK}{os.getpid()}"
        state = model.state_dict()
        with disk_full_guard(weights, tmp, needed_bytes=tensor_bytes(state)):  # the temporary file removed
            write_weights(state, tmp, metadata={"format": "pilot-export-v1"})
        os.replace(tmp, weights)
    OmegaConf.save(cfg, directory / "config.yaml", resolve=True)
    return weights


def export_files(directory: Path) -> tuple[str, ...]:
    """The files an export in ``directory`` must hold: an adapter's when it has an adapter config."""
    return ADAPTER_EXPORT_FILES if (Path(directory) / ADAPTER_CONFIG).is_file() else EXPORT_FILES


def control_count(task: TaskData, cfg: DictConfig) -> int:
    """The examples of the control batch: ``closing.control_examples`` of the validation split (of the
    training split when it has none), at most what that split holds — what phases.csv records."""
    declared = int(cfg.closing.control_examples)
    return min(declared, len(task.splits["val"])) or min(declared, len(task.splits["train"]))


@torch.no_grad()
def control_outputs(model: torch.nn.Module, task: TaskData, cfg: DictConfig) -> dict[str, torch.Tensor]:
    """Inputs (the collated control batch) and the model's outputs on them, as plain tensors."""
    count = control_count(task, cfg)
    items = task.encoded("val")[:count] or task.encoded("train")[:count]
    batch = task.collate(items)
    model.eval()
    device = next(model.parameters()).device
    output = task.forward(model, move_to(batch, device))
    tensors = {f"input.{k}": v.contiguous() for k, v in batch.items() if torch.is_tensor(v)}
    tensors["output"] = logits_of(output).detach().float().cpu().contiguous()
    return tensors


def export_with_controls(model: torch.nn.Module, task: TaskData, cfg: DictConfig, directory: Path) -> Path:
    """The export and its control outputs; weights holding NaN/inf are refused, as a checkpoint is (the
    pilot's export of a model its tiny training left NaN passed, and the reload then 'differed' by NaN)."""
    if bad := non_finite_tensors(model.state_dict()):
        raise ValueError(
            f"refusing to export: non-finite values in {len(bad)} tensor(s) ({', '.join(b.rstrip('.') for b in bad[:3])}): "
            "such weights reproduce nothing"
        )
    directory = Path(directory)
    weights = export_artefact(model, cfg, directory)
    with disk_full_guard(directory / CONTROL_FILE):
        save_file(control_outputs(model, task, cfg), str(directory / CONTROL_FILE))
    return weights
