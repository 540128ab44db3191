"""The step itself: collect, judge, write the two files, and one line that sums it up."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from pilot.checks.result import CheckResult, summarise
from pilot.data.task import TaskData
from pilot.environment.device import DeviceFacts
from pilot.environment.facts import collect
from pilot.environment.files import write_files
from pilot.environment.report_lines import markdown_lines
from pilot.environment.verdict import judge

STEP = "environment"


def _summary(facts: dict[str, Any], seconds: float) -> str:
    stack, device, numerics = facts["torch"], DeviceFacts(**facts["device"]), facts["numerics"]
    attention = facts["attention"]
    if attention.get("examined") and attention["probes"]:
        selected = sorted({p["selected"] for p in attention["probes"]})
        kernels = f"attention: {'/'.join(selected)} on {attention['probes'][0]['device']}"
        if device.kind == "cpu" or attention["probes"][0]["device"] == "cpu":
            kernels += " (CUDA kernels not measurable on CPU)"
    else:
        kernels = "attention: " + (
            "no scaled_dot_product_attention call" if attention.get("examined") else "not examined"
        )
    dist_ = facts["distributed"]
    imported = sum(t["imports"] for t in facts["targets"])
    return (
        f"Python {facts['python']['version']}, torch {stack['version']} ({stack['build']}); "
        f"{device.describe()}; bf16 {'yes' if numerics['bf16'] else 'no'}, TF32 "
        f"{'yes' if numerics['tf32'] else 'no'}, fp8 {'yes' if numerics['fp8'] else 'no'}; {kernels}; "
        f"{dist_['backend']} {'initialises' if dist_['initialises'] else 'does not initialise'}; "
        f"{imported}/{len(facts['targets'])} target(s) import; {facts['distributions']} distributions "
        f"locked; {seconds:.2f} s"
    )


def environment_step(
    cfg: DictConfig, run_dir: Path | None = None, device: DeviceFacts | None = None, task: TaskData | None = None
) -> CheckResult:
    """The pilot's first step. Writes environment.json and requirements.lock into ``run_dir`` (when
    given); ``device`` replaces the detected device (a simulated GPU in tests)."""
    started = time.perf_counter()
    facts, installed = collect(cfg, device, task)
    fails, warns = judge(cfg, facts)
    facts["verdict"] = "fail" if fails else ("warn" if warns else "pass")
    facts["findings"] = [str(f) for f in fails + warns]
    paths = write_files(run_dir, facts, installed) if run_dir is not None else {}
    seconds = time.perf_counter() - started
    facts["seconds"]["step"] = round(seconds, 4)
    if run_dir is not None:  # the step's own duration, included
        paths["facts"].write_text(json.dumps(facts, indent=1, default=str) + "\n")
    result = summarise(
        STEP,
        fails,
        _summary(facts, seconds),
        {"seconds": facts["seconds"], "files": {k: str(v) for k, v in paths.items()}, "table": markdown_lines(facts)},
        warns,
    )
    return result
