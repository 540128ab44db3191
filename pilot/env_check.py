"""``python -m pilot.env_check <pilot run dir> [--smoke]``: run it first on the rented machine.

It collects the environment step's facts here (with the run's own config) and compares them with
what the pilot recorded in its run directory (``environment.json``, ``requirements.lock``,
``memory_estimate.json`` for the GPU planned, ``run.json`` for the code revision). One line per
difference, with what it affects:

- distributions missing or at another version (the campaign's dependencies — torch, pilot, the
  targets' distributions and what they require — can change results; others are notes);
- torch, Python, CUDA, cuDNN, NCCL at another major.minor; a driver older than torch's CUDA;
- a GPU model other than the one planned (the choice sheet's rental), fewer GPUs than planned;
- a precision the config needs that this GPU lacks, fp32 matmuls running as TF32 here;
- an attention kernel the pilot had (or the requirements predicted) that is unavailable here;
- a distributed backend that does not initialise; a ``_target_`` module that does not import here
  or whose file differs from the pilot's (sha256); another code revision.

``--smoke`` rebuilds the configured variant, runs one training update and one evaluation here and
compares the first update's loss with the pilot's (``SMOKE_RTOL``, declared per precision, for a
different device). Every result is appended to the campaign's journal.

Exit codes: 0 nothing that can change results or fail the campaign (notes only); 1 at least one
such difference; 2 a bad argument or an unreadable run directory (a message, no traceback).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from packaging.version import InvalidVersion, Version

from pilot.closing import code_running
from pilot.config.values import enum_value, resolve_device
from pilot.engine.build import configure_threads
from pilot.environment import (
    FACTS_FILE,
    LOCK_FILE,
    DeviceFacts,
    Installed,
    LockUnreadable,
    _major_minor,
    collect,
    config_targets,
    error_line,
    read_lock,
    target_facts,
)
from pilot.errors import PilotError
from pilot.phases.gates import PhaseRunner
from pilot.rental.journal import append_entry
from pilot.run_record import code_revision, config_hash

# relative tolerance of the first update's loss on another device, per precision (declared, not
# measured): fp32 kernels differ in summation order (~1e-6); reduced precision rounds each matmul
SMOKE_RTOL = {"fp32": 1e-3, "bf16": 2e-2, "fp16": 1e-2}
CONFIG_FILES = ("config.yaml", "export/rank0/config.yaml", ".hydra/config.yaml")  # resolved ones first
SHOWN_EXTRAS = 8  # distributions only here: how many are named


class RunDirRefused(PilotError):
    """The run directory cannot be compared: missing, not a pilot's, or its config is refused."""


@dataclass
class Difference:
    """One line of the diff: what differs, the pilot's value, this machine's, and what it affects."""

    what: str
    pilot: Any
    here: Any
    affects: str
    severe: bool  # can change results or fail the campaign: exit 1

    def line(self) -> str:
        return (
            f"{'DIFF' if self.severe else 'note'}  {self.what}: pilot {self.pilot}, here {self.here} — {self.affects}"
        )


@dataclass
class PilotRun:
    """What the pilot left in its run directory."""

    directory: Path
    facts: dict[str, Any]
    lock: dict[str, tuple[str, str, bool]]
    record: dict[str, Any]
    cfg: DictConfig
    config_source: str
    planned: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading the run directory
def _read_json(path: Path, required: bool) -> dict[str, Any]:
    if not path.exists() and not required:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LockUnreadable(
            f"{path} cannot be read ({error_line(error)}). Fix: restore the file the pilot wrote, or rerun the pilot."
        ) from None
    if not isinstance(data, dict):
        raise LockUnreadable(f"{path} is not a JSON object. Fix: restore the file the pilot wrote.")
    return data


def _load_config(directory: Path, record: dict[str, Any]) -> tuple[DictConfig, str]:
    """The run's config: the first file that hashes to run.json's config_hash; without run.json,
    the first that exists (said so)."""
    tried = []
    for name in CONFIG_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            cfg = OmegaConf.load(path)
            digest = config_hash(cfg) if record.get("config_hash") else None
        except Exception as error:  # not YAML, a broken interpolation: try the next file
            tried.append(f"{name} ({type(error).__name__})")
            continue
        if not isinstance(cfg, DictConfig):
            tried.append(f"{name} (not a mapping)")
            continue
        if digest is None:
            return cfg, f"{name} (not verified: no config_hash in run.json)"
        if digest == record["config_hash"]:
            return cfg, f"{name} (matches run.json's config_hash {digest})"
        tried.append(f"{name} (hash {digest} != {record['config_hash']})")
    looked = ", ".join(tried) or "none of " + ", ".join(CONFIG_FILES) + " exists"
    raise RunDirRefused(
        f"{directory}: no config of the run to compare with ({looked}). Fix: give the pilot's "
        "run directory as it was written (with its export/ or .hydra/ folder)."
    )


def _refuse_code_running(cfg: DictConfig, source: str) -> None:
    """env_check builds the model and the task from the run's config: a target that runs code or touches
    files by name (os.system, torch.load, ...) is refused, as the closing refuses it."""
    blocked = [
        f"{key}={target}: {why}"
        for key, target in config_targets(cfg).items()
        if isinstance(target, str) and (why := code_running(target))
    ]
    if blocked:
        raise RunDirRefused(f"{source} names targets env_check never builds: " + "; ".join(blocked))


def _planned(directory: Path, cfg: DictConfig) -> dict[str, Any] | None:
    """The rental the pilot's choice sheet chose (memory_estimate.json), with its catalog entry."""
    estimate = _read_json(directory / "memory_estimate.json", required=False)
    chosen = estimate.get("chosen") if isinstance(estimate.get("chosen"), dict) else None
    if not chosen or not chosen.get("gpu"):
        return None
    entry = OmegaConf.select(cfg, f"rental.catalog.{chosen['gpu']}", default=None)
    entry = OmegaConf.to_container(entry, resolve=True) if isinstance(entry, DictConfig) else {}
    return {
        "gpu": chosen["gpu"],
        "count": int(chosen.get("count") or 1),
        "device_name": entry.get("device_name", ""),
        "memory_gib": entry.get("memory_gib"),
    }


def load_run(directory: Path) -> PilotRun:
    directory = Path(directory)
    if not directory.is_dir():
        raise RunDirRefused(
            f"{directory}: no such directory. Fix: the pilot's run directory "
            "(outputs/<date>/<time>-<suffix>), copied to this machine."
        )
    missing = [name for name in (FACTS_FILE, LOCK_FILE) if not (directory / name).is_file()]
    if missing:
        raise RunDirRefused(
            f"{directory} holds no {' and no '.join(missing)}: not a pilot run directory, or a "
            "pilot from before the environment step. Fix: give a pilot's run directory, or "
            "rerun the pilot (python -m pilot ...) to record its environment."
        )
    facts = _read_json(directory / FACTS_FILE, required=True)
    for key in ("python", "torch", "cuda", "device", "targets"):
        if key not in facts:
            raise LockUnreadable(
                f"{directory / FACTS_FILE} has no '{key}': not written by the environment step. "
                "Fix: restore the file, or rerun the pilot."
            )
    record = _read_json(directory / "run.json", required=False)
    cfg, source = _load_config(directory, record)
    _refuse_code_running(cfg, source)
    return PilotRun(directory, facts, read_lock(directory / LOCK_FILE), record, cfg, source, _planned(directory, cfg))


# --------------------------------------------------------------------------- comparisons
def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _multi_gpu(run: PilotRun) -> bool:
    return int(run.cfg.distributed.replicas) > 1 or bool(run.planned and run.planned["count"] > 1)


def compare_stack(pilot: dict[str, Any], here: dict[str, Any], multi_gpu: bool) -> list[Difference]:
    """Python, torch, CUDA runtime and driver, cuDNN, NCCL."""
    found: list[Difference] = []
    p_py, h_py = pilot["python"]["version"], here["python"]["version"]
    if _major_minor(p_py) != _major_minor(h_py):
        found.append(
            Difference(
                "Python", p_py, h_py, "another minor release: every package's build and behaviour may differ", True
            )
        )
    elif p_py != h_py:
        found.append(Difference("Python", p_py, h_py, "another patch release: bug fixes only", False))
    p_torch, h_torch = pilot["torch"], here["torch"]
    if _public(p_torch["version"]) != _public(h_torch["version"]):
        kind = "major.minor" if _major_minor(p_torch["version"]) != _major_minor(h_torch["version"]) else "patch"
        found.append(
            Difference(
                "torch",
                p_torch["version"],
                h_torch["version"],
                f"another {kind} release: every kernel; numerics, memory and speed may differ from the pilot's",
                True,
            )
        )
    elif p_torch["build"] != h_torch["build"]:
        pilot_cpu = p_torch["cuda"] is None and p_torch["hip"] is None
        found.append(
            Difference(
                "torch build",
                p_torch["build"],
                h_torch["build"],
                "the pilot ran torch's CPU build: the GPU kernels were not exercised by the pilot (run with --smoke)"
                if pilot_cpu
                else "another GPU build of the same release",
                not pilot_cpu
                and _major_minor(p_torch["cuda"] or p_torch["hip"]) != _major_minor(h_torch["cuda"] or h_torch["hip"]),
            )
        )
    p_cuda, h_cuda = pilot["cuda"], here["cuda"]
    if p_cuda["runtime"] and not h_cuda["runtime"]:
        found.append(
            Difference(
                "CUDA runtime", p_cuda["runtime"], "none (CPU build)", "the campaign's GPU kernels cannot run", True
            )
        )
    elif p_cuda["runtime"] and _major_minor(p_cuda["runtime"]) != _major_minor(h_cuda["runtime"]):
        found.append(
            Difference(
                "CUDA runtime",
                p_cuda["runtime"],
                h_cuda["runtime"],
                "another CUDA: cuBLAS/cuDNN kernels, numerics and memory may differ",
                True,
            )
        )
    for name, what, severe in (("cudnn", "cuDNN", True), ("nccl", "NCCL", multi_gpu)):
        before, now = p_cuda.get(name), h_cuda.get(name)
        if before and now and _major_minor(before) != _major_minor(now):
            affects = (
                "convolution and cuDNN attention kernels: numerics and speed"
                if name == "cudnn"
                else "gradient all-reduce between GPUs" + ("" if multi_gpu else " (unused: one GPU, one replica)")
            )
            found.append(Difference(what, before, now, affects, severe))
    p_driver, h_driver = p_cuda["driver"], h_cuda["driver"]
    if p_driver.get("version") and h_driver.get("version") and p_driver["version"] != h_driver["version"]:
        found.append(
            Difference(
                "NVIDIA driver",
                p_driver["version"],
                h_driver["version"],
                "another driver: same kernels while it supports torch's CUDA",
                False,
            )
        )
    runtime, driver_cuda = h_cuda["runtime"], h_driver.get("cuda")
    if runtime and driver_cuda and _major_minor(driver_cuda) < _major_minor(runtime):
        found.append(
            Difference(
                "driver's CUDA",
                p_driver.get("cuda") or "-",
                driver_cuda,
                f"older than torch's CUDA {runtime}: CUDA may not initialise or kernels may "
                "fail to load. Fix: a newer driver, or a torch built for this CUDA",
                True,
            )
        )
    return found


def compare_device(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """The GPU planned (or the pilot's GPU) against the one here."""
    device = DeviceFacts(**here["device"])
    planned = run.planned
    pilot_device = DeviceFacts(**run.facts["device"])
    affects = "the choice sheet's memory fit and time per update were made for that GPU"
    if planned:
        wanted = f"{planned['count']} x {planned['gpu']}"
        if device.kind == "cpu":
            return [Difference("GPU", f"{wanted} planned", "no GPU visible", affects, True)]
        name = planned.get("device_name") or ""
        found = []
        if name and name.lower() not in device.name.lower():
            found.append(
                Difference(
                    "GPU model",
                    f"{wanted} planned ('{name}')",
                    f"{device.count} x {device.name}",
                    affects + "; kernels and numerics differ by architecture",
                    True,
                )
            )
        elif not name:
            found.append(
                Difference(
                    "GPU model",
                    f"{wanted} planned (no device_name in its catalog entry)",
                    device.name,
                    "cannot be compared: add device_name to the catalog entry",
                    False,
                )
            )
        if device.count < planned["count"]:
            found.append(
                Difference(
                    "GPU count",
                    planned["count"],
                    device.count,
                    "fewer GPUs than planned: the effective batch or the time per update changes",
                    True,
                )
            )
        return found
    if pilot_device.kind != "cpu" and pilot_device.name != device.name:
        return [
            Difference(
                "GPU model",
                pilot_device.name,
                device.name,
                "the pilot's measurements (memory, time per update) were made on another GPU",
                True,
            )
        ]
    if pilot_device.kind == "cpu":
        return [
            Difference(
                "GPU plan",
                "none recorded (no chosen rental in memory_estimate.json)",
                device.describe(),
                "nothing to compare the GPU with",
                False,
            )
        ]
    return []


def compare_numerics(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """The precision the config needs, TF32 on fp32 matmuls."""
    found = []
    device = DeviceFacts(**here["device"])
    precision = str(enum_value(run.cfg.precision.dtype))
    for dtype in ("bf16", "fp8"):
        if precision == dtype and not getattr(device, dtype):
            found.append(
                Difference(
                    f"precision {dtype}",
                    "supported",
                    f"unsupported on {device.describe()}",
                    f"precision.dtype={dtype} cannot run here",
                    True,
                )
            )
    numerics, before = here["numerics"], run.facts.get("numerics", {})
    tf32_here = device.tf32 and (
        numerics["tf32_matmul"]
        or numerics["float32_matmul_precision"] != "highest"
        or numerics.get("tf32_override") == "1"
    )
    tf32_pilot = bool(before.get("tf32")) and (
        before.get("tf32_matmul") or before.get("float32_matmul_precision", "highest") != "highest"
    )
    if precision == "fp32" and tf32_here and not tf32_pilot:
        found.append(Difference("fp32 matmuls", "fp32", "TF32", "results differ from the pilot's at ~1e-3", True))
    return found


def compare_attention(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    """Kernels the pilot had (same kind of device) or that the requirements expect, unavailable here."""
    found = []
    before, now = run.facts.get("attention", {}), here["attention"]
    if not now.get("examined"):
        return [
            Difference(
                "attention",
                "examined",
                f"not examined ({now.get('reason')})",
                "the model could not be built here (see the target lines)",
                False,
            )
        ]
    expected = {r["feature"] for r in run.facts.get("requirements", [])}
    for index, probe in enumerate(now.get("probes", [])):
        available = {n for n, b in probe["backends"].items() if b["available"]}
        call = now["calls"][index]
        label = f"attention call {index + 1} ({call['query']} {call['dtype']})"
        if not available:
            found.append(Difference(label, "a kernel", "no kernel runs it", "the model cannot run here", True))
            continue
        old = before.get("probes", [])[index] if index < len(before.get("probes", [])) else None
        same_kind = old is not None and old["device"].split(":")[0] == probe["device"].split(":")[0]
        if same_kind:
            lost = sorted(n for n, b in old["backends"].items() if b["available"] and n not in available)
            if lost:
                found.append(
                    Difference(
                        label,
                        "kernels " + ", ".join(sorted(n for n, b in old["backends"].items() if b["available"])),
                        "without " + ", ".join(lost),
                        "attention runs another kernel: memory, speed and the last bits of results",
                        True,
                    )
                )
            if old["selected"] != probe["selected"]:
                found.append(
                    Difference(
                        f"{label}: kernel selected",
                        old["selected"],
                        probe["selected"],
                        "memory, speed and the last bits of results",
                        True,
                    )
                )
        elif probe["device"].startswith("cuda"):
            for feature, kernel in (("flash_attention", "flash"), ("mem_efficient_attention", "mem_efficient")):
                if feature in expected and kernel not in available:
                    found.append(
                        Difference(
                            f"{label}: {kernel} attention",
                            "expected by the requirements",
                            f"unavailable ({probe['backends'][kernel]['reason']})",
                            f"falls back to {probe['selected']}: more memory and time than the choice sheet's",
                            True,
                        )
                    )
    return found


def compare_distributed(run: PilotRun, here: dict[str, Any]) -> list[Difference]:
    now = here["distributed"]
    if now["initialises"]:
        return []
    needed = _multi_gpu(run) or now["configured"] != "auto"
    return [
        Difference(
            f"distributed backend {now['backend']}",
            "initialises" if run.facts.get("distributed", {}).get("initialises") else "not used",
            f"does not initialise ({now.get('error')})",
            "DDP over several GPUs cannot start" if needed else "unused (one GPU, one replica)",
            needed,
        )
    ]


def compare_targets(run: PilotRun, installed: dict[str, Installed]) -> list[Difference]:
    """Every target the pilot imported: imports here, and the same file (sha256)."""
    found = []
    for before in run.facts["targets"]:
        if not before.get("imports"):
            continue
        now = target_facts(before["key"], before["target"], installed)
        label = f"{before['key']}={before['target']}"
        if not now["imports"]:
            error = str(now.get("error"))
            found.append(
                Difference(
                    f"{label}: module {now.get('module')}",
                    "imports",
                    error if "has no attribute" in error else f"does not import ({error})",
                    "the campaign cannot build it. Fix: install what provides it",
                    True,
                )
            )
        elif before.get("sha256") and now.get("sha256") != before["sha256"]:
            found.append(
                Difference(
                    f"{label}: {now.get('file')}",
                    f"sha256 {before['sha256'][:12]}",
                    f"sha256 {str(now.get('sha256'))[:12]}",
                    "its code differs from the pilot's: results may differ",
                    True,
                )
            )
    return found


def compare_distributions(run: PilotRun, installed: dict[str, Installed], campaign: dict[str, str]) -> list[Difference]:
    """The lock against what is installed; torch has its own line (compare_stack)."""
    found, extras = [], sorted(set(installed) - set(run.lock))
    for key, (name, version, _editable) in sorted(run.lock.items()):
        if key == "torch":
            continue
        severe = key in campaign
        affects = (
            "a dependency of the campaign: its code runs in every update"
            if severe
            else "not among the campaign's dependencies: does not change results"
        )
        now = installed.get(key)
        if now is None:
            found.append(Difference(f"distribution {name}", version, "not installed", affects, severe))
        elif _public(now.version) != _public(version):
            found.append(Difference(f"distribution {name}", version, now.version, affects, severe))
        elif now.version != version:
            found.append(
                Difference(
                    f"distribution {name}",
                    version,
                    now.version,
                    "another build of the same release (local version label)",
                    False,
                )
            )
    if extras:
        shown = ", ".join(f"{installed[k].name}=={installed[k].version}" for k in extras[:SHOWN_EXTRAS])
        more = f" (+{len(extras) - SHOWN_EXTRAS} more)" if len(extras) > SHOWN_EXTRAS else ""
        found.append(
            Difference(
                "distributions only here",
                "-",
                shown + more,
                "installed here, absent at the pilot: unused unless something imports them",
                False,
            )
        )
    return found


def compare_code(record: dict[str, Any]) -> list[Difference]:
    before = record.get("code_revision") or {}
    if not before.get("commit"):
        return []
    now = code_revision()
    if not now.get("commit"):
        return [
            Difference(
                "code revision",
                before["commit"][:12],
                "not a git checkout",
                "cannot compare the pilot's code (the target lines compare their files)",
                False,
            )
        ]
    if now["commit"] != before["commit"]:
        return [
            Difference(
                "code revision",
                before["commit"][:12],
                now["commit"][:12],
                "another commit of pilot: training code may differ",
                True,
            )
        ]
    if before.get("dirty") or now.get("dirty"):
        return [
            Difference(
                "uncommitted changes",
                "dirty" if before.get("dirty") else "clean",
                "dirty" if now.get("dirty") else "clean",
                "same commit; uncommitted edits cannot be compared (the target lines compare their files)",
                False,
            )
        ]
    return []


# --------------------------------------------------------------------------- --smoke
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
    configure_threads(cfg)
    device = resolve_device(cfg)
    precision = str(enum_value(cfg.precision.dtype))
    rtol = SMOKE_RTOL.get(precision, SMOKE_RTOL["fp32"]) if rtol is None else rtol
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
                f"differs by {gap:.3g} > {allowed:.3g} (rtol {rtol:g} for {precision}"
                + (", + half the last printed digit" if half_digit else "")
                + "): the model, data or kernels compute something else here",
                True,
            )
        )
    else:
        lines.append(
            f"first-step loss {update.loss:.6g} within {allowed:.3g} of the pilot's {recorded:g} "
            f"({source}; rtol {rtol:g} declared for {precision} on another device)"
        )
    return found, lines


# --------------------------------------------------------------------------- the check, the journal, the CLI
def check(
    run_dir: Path, run_smoke: bool = False, rtol: float | None = None
) -> tuple[list[Difference], list[str], PilotRun]:
    """(differences, informational lines, the run) for ``run_dir`` on this machine."""
    run = load_run(run_dir)
    here, installed = collect(run.cfg)
    campaign = {**run.facts.get("campaign_distributions", {}), **here["campaign_distributions"]}
    differences = (
        compare_stack(run.facts, here, _multi_gpu(run))
        + compare_device(run, here)
        + compare_numerics(run, here)
        + compare_attention(run, here)
        + compare_distributed(run, here)
        + compare_targets(run, installed)
        + compare_distributions(run, installed, campaign)
        + compare_code(run.record)
    )
    lines = [
        f"env_check: {run.directory} (pilot on {DeviceFacts(**run.facts['device']).describe()}, torch "
        f"{run.facts['torch']['version']}) vs this machine ({DeviceFacts(**here['device']).describe()}, torch "
        f"{here['torch']['version']}); config {run.config_source}; {len(run.lock)} distributions locked"
    ]
    if run_smoke:
        missing = [
            d
            for d in differences
            if d.severe and ("does not import" in str(d.here) or "has no attribute" in str(d.here))
        ]
        if missing:
            differences.append(
                Difference(
                    "smoke",
                    "one update and one evaluation",
                    "not run",
                    "a target does not import here (see its line)",
                    True,
                )
            )
        else:
            try:
                found, smoke_lines = smoke(run, rtol)
            except Exception as error:  # what the smoke exists to find: this machine cannot run the variant
                found = [Difference("smoke", "one update and one evaluation", "crashed", error_line(error), True)]
                smoke_lines = []
            differences += found
            lines += smoke_lines
    return differences, lines, run


def _journal(run: PilotRun, path: Path | None, lines: list[str]) -> str | None:
    target = path or Path(
        os.environ.get("PILOT_JOURNAL") or OmegaConf.select(run.cfg, "campaign.journal", default="sweeps/journal.md")
    )
    try:
        append_entry(target, f"env_check ({run.directory}) on {socket.gethostname()}", lines)
    except OSError as error:  # the journal is a notebook: it never fails the check
        return f"env_check: could not append to the journal {target}: {error}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pilot.env_check", description="Compare this machine with the stack a pilot passed on."
    )
    parser.add_argument("run_dir", type=Path, help="the pilot's run directory (environment.json, requirements.lock)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="also run one training update and one evaluation "
        "here and compare the first update's loss with the pilot's",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="tolerance of the smoke comparison (default: "
        + ", ".join(f"{k} {v:g}" for k, v in SMOKE_RTOL.items())
        + ")",
    )
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="the campaign's journal (default: $PILOT_JOURNAL, else the run's campaign.journal)",
    )
    parser.add_argument("--no-journal", action="store_true", help="do not append the result to the journal")
    args = parser.parse_args(argv)  # a bad argument exits 2 with the usage
    started = time.perf_counter()
    try:
        if args.rtol is not None and not (math.isfinite(args.rtol) and args.rtol >= 0):
            raise RunDirRefused(f"--rtol {args.rtol}: must be a finite number >= 0")
        differences, lines, run = check(args.run_dir, args.smoke, args.rtol)
    except PilotError as error:
        print(f"env_check: {error}", file=sys.stderr)
        return 2
    severe = [d for d in differences if d.severe]
    verdict = (
        f"env_check: {len(severe)} difference(s) that can change results or fail the campaign"
        if severe
        else "env_check: pass — nothing here can change the pilot's results"
    )
    verdict += f"; {len(differences) - len(severe)} note(s); {time.perf_counter() - started:.1f} s"
    output = lines + [d.line() for d in severe] + [d.line() for d in differences if not d.severe] + [verdict]
    print("\n".join(output))
    if not args.no_journal:
        problem = _journal(run, args.journal, [f"- {line}" for line in output])
        if problem:
            print(problem, file=sys.stderr)
    return 1 if severe else 0


if __name__ == "__main__":
    sys.exit(main())
