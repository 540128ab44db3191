"""Predictions on the fixed validation subset, one JSON line per example, for later analysis."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pilot.data.task import IGNORE_INDEX, move_to
from pilot.errors import disk_full_guard


def _readable(task, ids: list[int], one_label: bool) -> str:
    """``ids`` as a reader wants them: a class's name where the example has one label (``one_label``) and the
    task names its classes (``TaskData.names``), else the tokens ``decode_tokens`` gives (a class id decoded
    as a vocabulary token was a wrong target), else the ids."""
    names = task.names() if one_label else []
    if names and len(ids) == 1 and 0 <= ids[0] < len(names):
        return str(names[ids[0]])
    if task.decode_tokens is not None:
        return "".join(task.decode_tokens(ids))
    return " ".join(str(i) for i in ids)


@torch.no_grad()
def write_predictions(trainer, items: list[dict], path: Path, model: torch.nn.Module | None = None) -> Path:
    """One line per item: the model's (default: the trainer's; under FSDP the gathered whole one) exact-match
    prediction against the target."""
    task, model = trainer.task, model if model is not None else trainer.raw_model
    model.eval()
    step = int(trainer.cfg.batch.eval_micro_batch)
    path, tmp = Path(path), Path(path).with_name(f".{Path(path).name}.tmp")
    try:
        with disk_full_guard(path, tmp), tmp.open("w") as handle:  # no space: one message naming the file
            _write_lines(trainer, task, model, items, step, handle)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)  # whole or not at all: a disk that filled up left an empty file before
    return path


def _write_lines(trainer, task, model: torch.nn.Module, items: list[dict], step: int, handle) -> None:
    """Each item's line, ``step`` items per forward."""
    for start in range(0, len(items), step):
        batch = move_to(task.collate(items[start : start + step]), trainer.device)
        with trainer.autocast():
            output = task.forward(model, batch)
        predicted, labels = task.predict(output, batch).cpu(), batch["labels"].cpu()
        for row, index in enumerate(batch["index"].tolist()):
            target, guess = labels[row].reshape(-1), predicted[row].reshape(-1)
            counted = target != IGNORE_INDEX
            target_ids, guess_ids = target[counted].tolist(), guess[counted].tolist()
            handle.write(
                json.dumps(
                    {
                        "index": index,
                        "update": trainer.updates_done,
                        "target": _readable(task, target_ids, labels.dim() == 1),
                        "prediction": _readable(task, guess_ids, labels.dim() == 1),
                        "exact": target_ids == guess_ids,
                        "targets_correct": sum(a == b for a, b in zip(target_ids, guess_ids)),
                        "targets": len(target_ids),
                    }
                )
                + "\n"
            )
