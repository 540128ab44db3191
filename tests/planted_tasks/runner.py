"""Run every check on every planted task of this folder (convention: README.md here).

``run_all()`` gives one outcome per task: for a planted bug, whether the check it names flagged
it (``fail``, or ``warn``/``fail`` where ``warn`` is expected); for a correct task, every check
that did not pass (false alarms). Used by ``tests/test_loss_checks.py`` and
``bench/planted_bugs.py``. Checks are called directly, without Hydra, each on a fresh model.
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from pilot.checks.alignment import alignment_check
from pilot.checks.batch_edges import eval_determinism_check, smallest_micro_batch_check
from pilot.checks.contract import STEP as CONTRACT_STEP
from pilot.checks.contract import check_contract
from pilot.checks.inspect_examples import inspect_task
from pilot.checks.objective import objective_check
from pilot.checks.result import CheckResult
from pilot.checks.split_audit import audit_split
from pilot.data.task import ContractError, TaskData

HERE = Path(__file__).resolve().parent
PACKAGE = "tests.planted_tasks"
DEFAULTS = {"micro_batch": 4, "accumulation": 1, "eval_micro_batch": None, "split_by": "group"}
ALARMS = ("warn", "fail", "oom")  # a correct task must get none of these


def _tiny_subset(task: TaskData, build: Callable[[], torch.nn.Module], settings: dict[str, Any]) -> CheckResult:
    """The pilot's tiny-subset check with the default config's optimizer and the task's own model."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pilot.checks.tiny_subset import tiny_subset_check
    from pilot.config import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(HERE.parents[1] / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["run.device=cpu", *settings.get("tiny_overrides", [])])
    GlobalHydra.instance().clear()
    return tiny_subset_check(cfg, task, torch.device("cpu"), build_model=build)


# step -> check(task, fresh-model factory, settings); a new check step is one entry here
CHECKS: dict[str, Callable[[TaskData, Callable[[], torch.nn.Module], dict[str, Any]], CheckResult]] = {
    "inspect": lambda task, build, s: inspect_task(task, 2, s["micro_batch"], build())[0],
    "split_audit": lambda task, build, s: audit_split(task, s["split_by"]),
    "alignment": lambda task, build, s: alignment_check(task, build(), s["micro_batch"]),
    "objective": lambda task, build, s: objective_check(
        task, build(), s["micro_batch"], accumulation=s["accumulation"]
    ),
    "smallest_micro_batch": lambda task, build, s: smallest_micro_batch_check(
        task, build(), s["micro_batch"], s["accumulation"], s["eval_micro_batch"] or s["micro_batch"]
    ),
    "eval_determinism": lambda task, build, s: eval_determinism_check(
        task, build(), s["eval_micro_batch"] or s["micro_batch"]
    ),
    "tiny_subset": _tiny_subset,
}
OPT_IN = ("tiny_subset",)  # trains: run only where a task lists it in SETTINGS["checks"]


def task_names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem != "runner" and not p.stem.startswith("_"))


def load(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def settings_of(module: ModuleType) -> dict[str, Any]:
    settings = {**DEFAULTS, **getattr(module, "SETTINGS", {})}
    settings.setdefault("checks", [step for step in CHECKS if step not in OPT_IN])
    return settings


def model_factory(module: ModuleType, task: TaskData) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        torch.manual_seed(0)
        if hasattr(module, "build_model"):
            return module.build_model(task)
        return module.Model()

    return build


def run_task(module: ModuleType, tiny_subset: bool = False, named_only: bool = False) -> dict[str, CheckResult]:
    """The contract first, as the pilot runs it (a refusal stops the rest: every step would fail the
    same way); then every check the task's settings name, each on a fresh task and model; a crash is
    a fail. ``tiny_subset``: a correct task runs the tiny-subset check too, as ``python -m pilot`` does.
    ``named_only``: a planted bug runs the contract and the check it names alone (the suite asserts no
    other step of it)."""
    settings = settings_of(module)
    if tiny_subset and module.EXPECTED is None and "tiny_subset" not in settings["checks"]:
        settings["checks"] = [*settings["checks"], "tiny_subset"]
    if named_only and module.EXPECTED is not None:
        settings["checks"] = [step for step in settings["checks"] if step == module.EXPECTED["step"]]
    try:
        task = module.make_task()
        check_contract(task, model_factory(module, task)())
    except ContractError as error:
        return {CONTRACT_STEP: CheckResult(CONTRACT_STEP, "fail", str(error))}
    results = {}
    for step in settings["checks"]:
        try:
            task = module.make_task()
            results[step] = CHECKS[step](task, model_factory(module, task), settings)
        except Exception as error:  # noqa: BLE001 - a crash is a verdict too
            results[step] = CheckResult(
                step, "fail", f"crashed: {type(error).__name__}: {error}", details={"traceback": traceback.format_exc()}
            )
    return results


def outcome(name: str, module: ModuleType, results: dict[str, CheckResult], seconds: float) -> dict[str, Any]:
    expected: dict[str, str] | None = module.EXPECTED
    verdicts = {step: r.verdict for step, r in results.items()}
    row: dict[str, Any] = {
        "task": name,
        "planted": expected is not None,
        "description": (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else "",
        "verdicts": verdicts,
        "seconds": round(seconds, 3),
    }
    if expected is None:
        alarms = {step: results[step].reason for step, v in verdicts.items() if v in ALARMS}
        row.update(ok=not alarms, alarms=alarms)
        return row
    step, wanted = expected["step"], expected["verdict"]
    if CONTRACT_STEP in results:  # refused before any check, naming what the task's functions return
        step = CONTRACT_STEP
    got = verdicts.get(step, "not run")
    crashed = step in results and results[step].reason.startswith("crashed:")  # a crash names no cause
    named = expected.get("said", "") in (results[step].reason if step in results else "")  # the cause, said
    detected = not crashed and named and (got == wanted or (wanted == "warn" and got == "fail"))
    row.update(
        ok=detected,
        expected=f"{step}: {wanted}",
        got=got,
        reason=results[step].reason if step in results else "check not run",
    )
    return row


def run_all(names: list[str] | None = None, tiny_subset: bool = False) -> list[dict[str, Any]]:
    rows = []
    for name in names or task_names():
        module = load(name)
        started = time.perf_counter()
        results = run_task(module, tiny_subset)
        rows.append(outcome(name, module, results, time.perf_counter() - started))
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    planted = [r for r in rows if r["planted"]]
    correct = [r for r in rows if not r["planted"]]
    return {
        "flagged": sum(r["ok"] for r in planted),
        "planted": len(planted),
        "false_alarms": sum(not r["ok"] for r in correct),
        "correct": len(correct),
    }
