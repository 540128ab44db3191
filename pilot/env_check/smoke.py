"""``--smoke``: one training update and one evaluation of the configured variant here; the update's loss
against the pilot's first update."""

from __future__ import annotations

import csv
import math
import re
import tempfile
from decimal import Decimal, InvalidOperation
from pathlib import Path

import torch
from hydra.utils import instantiate

from pilot.config.values import enum_value, resolve_device
from pilot.engine.build import configure_threads
from pilot.env_check.difference import Difference
from pilot.env_check.run_dir import PilotRun
from pilot.environment.device import DeviceFacts
from pilot.phases.gates import PhaseRunner

# relative tolerance of the first update's loss on another device, per precision (declared, not
# measured): fp32 kernels differ in summation order (~1e-6); reduced precision rounds each matmul
SMOKE_RTOL = {"fp32": 1e-3, "bf16": 2e-2, "fp16": 1e-2}


def recorded_first_step_loss(run: PilotRun) -> tuple[float | None, float, str]:
    """(loss, half of its last printed digit, where from): run.json's ``first_step_loss`` or a ``loss``
    column in phases.csv when the pilot records one, else the first_step row's detail in phases.csv
    (``loss 5.574``: 4 significant digits)."""
    value = run.record.get("first_step_loss")
    if isinstance(value, (int, float)):
        return float(value), 0.0, "run.json first_step_loss"
    path = run.directory / "phases.csv"
    if not path.is_file():
        return None, 0.0, "not recorded (no phases.csv)"
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row.get("phase") == "first_step" and str(row.get("rank")) in ("0", "0.0"):
                if row.get("loss"):  # a full-precision column, once the pilot writes one
                    return float(row["loss"]), 0.0, "phases.csv loss column"
                match = re.search(r"\bloss ([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", row.get("detail") or "")
                if match:
                    try:
                        exponent = Decimal(match.group(1)).as_tuple().exponent
                    except InvalidOperation:
                        return None, 0.0, "phases.csv first_step (unreadable loss)"
                    half = 0.5 * 10.0**exponent if isinstance(exponent, int) else 0.0
                    return float(match.group(1)), half, "phases.csv first_step (printed to 4 significant digits)"
    return None, 0.0, "not recorded (no first_step row with a loss in phases.csv)"


def smoke(run: PilotRun, rtol: float | None) -> tuple[list[Difference], list[str]]:
    """One training update and one evaluation of the configured variant here; the update's loss
    against the pilot's first update."""
    cfg = run.cfg
    threads = configure_threads(cfg).count
    device = resolve_device(cfg)
    precision = str(enum_value(cfg.precision.dtype))
    same = _same_machine_kind(run, device, threads)
    declared = (
        "the same device, torch and thread count: bit-identical"
        if same
        else f"declared for {precision} on another device"
    )
    rtol = (0.0 if same else SMOKE_RTOL.get(precision, SMOKE_RTOL["fp32"])) if rtol is None else rtol
    task = instantiate(cfg.data, _convert_="all")
    with tempfile.TemporaryDirectory(prefix="pilot-smoke-") as scratch:
        runner = PhaseRunner(cfg, task, device, Path(scratch))
        runner.build_model()
        update = runner.trainer.train_step()
        items = task.encoded("val")[: int(cfg.loop.eval_examples)]
        evaluation = runner.trainer.evaluate(items=items)
    lines = [
        f"smoke on {device}: one update (loss {update.loss:.6g}, {update.seconds:.3g} s), one evaluation "
        f"({evaluation['examples']} validation examples, loss {evaluation['loss']:.6g})"
    ]
    found = []
    if not (math.isfinite(update.loss) and math.isfinite(evaluation["loss"])):
        found.append(
            Difference(
                "smoke",
                "finite losses",
                f"update {update.loss}, evaluation {evaluation['loss']}",
                "the campaign would diverge at once",
                True,
            )
        )
    recorded, half_digit, source = recorded_first_step_loss(run)
    if recorded is None:
        found.append(Difference("first-step loss", source, f"{update.loss:.6g}", "nothing to compare with", False))
        return found, lines
    allowed = rtol * abs(recorded) + half_digit
    gap = abs(update.loss - recorded)
    if not gap <= allowed:
        found.append(
            Difference(
                "first-step loss",
                f"{recorded:g} ({source})",
                f"{update.loss:.6g}",
                f"differs by {gap:.3g} > {allowed:.3g} (rtol {rtol:g}, {declared}"
                + (", + half the last printed digit" if half_digit else "")
                + "): the model, data or kernels compute something else here",
                True,
            )
        )
    else:
        lines.append(
            f"first-step loss {update.loss:.6g} within {allowed:.3g} of the pilot's {recorded:g} "
            f"({source}; rtol {rtol:g}, {declared})"
        )
    return found, lines


def _same_machine_kind(run: PilotRun, device, threads: int) -> bool:
    """Whether this machine computes the pilot's first update bit for bit: the same device model, torch
    build and CPU thread count (the order of float reductions follows them)."""
    recorded = (run.record.get("threads") or {}).get("count")
    here = DeviceFacts.detect(device).describe()
    return (
        DeviceFacts(**run.facts["device"]).describe() == here
        and run.facts["torch"]["version"] == torch.__version__
        and recorded == threads
    )
