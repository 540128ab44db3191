"""The step's lines for the pilot's report (one table row per fact) and the campaign's journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot.checks.result import CheckResult
from pilot.environment.device import DeviceFacts
from pilot.rental.requirements import needs_text


def markdown_lines(facts: dict[str, Any]) -> list[str]:
    """The report's table: one row per fact."""
    rows = _stack_rows(facts) + _attention_rows(facts["attention"]) + _code_rows(facts)
    lines = ["| fact | value |", "| --- | --- |"]
    lines += [f"| {name} | {str(value).replace('|', '/')} |" for name, value in rows]
    return lines


def _stack_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """Python, torch, CUDA, cuDNN/NCCL, the device, every GPU, the numerics."""
    stack, cuda, numerics = facts["torch"], facts["cuda"], facts["numerics"]
    device = DeviceFacts(**facts["device"])
    rows = [
        (
            "Python",
            f"{facts['python']['version']} ({facts['python']['implementation']}, {facts['python']['platform']})",
        ),
        ("torch", f"{stack['version']} ({stack['build']}; CPU capability {stack['cpu_capability']})"),
        (
            "CUDA runtime / driver",
            f"{cuda['runtime'] or '-'} / {cuda['driver'].get('version') or '-'}"
            f" (driver's CUDA {cuda['driver'].get('cuda') or '-'})",
        ),
        ("cuDNN / NCCL", f"{cuda['cudnn'] or '-'} / {cuda['nccl'] or '-'}"),
        ("device", device.describe() + (f", {device.memory_bytes / 2**30:.1f} GiB" if device.memory_bytes else "")),
        (
            "GPUs",
            "; ".join(
                f"{g['index']}: {g['name']} ({g['capability']}, {g['memory_bytes'] / 2**30:.1f} GiB)"
                for g in facts["gpus"]
            )
            or "none visible",
        ),
        ("bf16 / TF32 / fp8", " / ".join("yes" if numerics[k] else "no" for k in ("bf16", "tf32", "fp8"))),
        (
            "TF32 enabled, deterministic",
            f"matmul {numerics['tf32_matmul']} (precision "
            f"{numerics['float32_matmul_precision']}), cuDNN {numerics['tf32_cudnn']}; "
            f"deterministic algorithms {numerics['deterministic_algorithms']}",
        ),
    ]
    return rows


def _attention_rows(attention: dict[str, Any]) -> list[tuple[str, str]]:
    """One row per recorded attention call: the kernels measured here and, on a CPU, those predicted for CUDA."""
    rows = []
    if not attention.get("examined"):
        rows.append(("attention", f"not examined: {attention.get('reason')}"))
    for call, probe in zip(attention.get("calls", []), attention.get("probes", [])):
        kernels = ", ".join(
            f"{n} {'yes' if b['available'] else ('no' if b['available'] is False else 'not measurable')}"
            for n, b in probe["backends"].items()
        )
        predicted = probe.get("cuda_predicted")
        guess = (
            (
                "; CUDA predicted: "
                + ", ".join(
                    f"{n} {'eligible' if p['eligible'] else 'not (' + '; '.join(p['reasons']) + ')'}"
                    for n, p in predicted.items()
                )
            )
            if predicted
            else ""
        )
        rows.append(
            (
                f"attention x{call['count']}",
                f"query {call['query']} {call['dtype']}, mask "
                f"{call['mask']['dtype'] if call['mask'] else 'none'}, causal {call['is_causal']}: "
                f"{kernels}; selected {probe['selected']} on {probe['device']}{guess}",
            )
        )
    return rows


def _code_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """The distributed backend, every target, the requirements of a GPU, the distributions."""
    rows = []
    dist_ = facts["distributed"]
    rows.append(
        (
            "distributed",
            f"{dist_['configured']} -> {dist_['backend']}: "
            + (dist_.get("how", "initialises") if dist_["initialises"] else f"fails ({dist_.get('error')})"),
        )
    )
    for target in facts["targets"]:
        where = ", ".join(
            f"{d['name']} {d['version']}" + (" editable" if d.get("editable") else "")
            for d in target.get("distributions", [])
        ) or target.get("distribution", "")
        state = (
            f"imports; sha256 {target.get('sha256', '')[:12]}; {where}"
            if target["imports"]
            else f"does not import ({target.get('error')})"
        )
        rows.append((target["key"], f"{target['target']}: {state}"))
    for requirement in facts.get("requirements", []):
        kind = "hard" if requirement["hard"] else "soft"
        rows.append(
            (
                "requires of a GPU",
                f"{requirement['feature']} ({requirement['because']}): {needs_text(requirement['feature'])}; {kind}",
            )
        )
    rows.append(
        (
            "distributions",
            f"{facts['distributions']} installed (requirements.lock); "
            f"{len(facts['campaign_distributions'])} in the campaign's dependencies",
        )
    )
    return rows


def journal_lines(result: CheckResult) -> list[str]:
    """The pilot's stack for the campaign's journal (one entry per pilot)."""
    lines = [f"- stack ({result.verdict}): {result.reason}"]
    lines += [f"- environment {f.problem}" for f in result.findings]
    files = result.details.get("files", {})
    if files:
        lines.append(
            f"- locked in {files.get('facts')} and {files.get('lock')}; check the rented machine with "
            f"`python -m pilot.env_check {Path(files['facts']).parent}`"
        )
    return lines
