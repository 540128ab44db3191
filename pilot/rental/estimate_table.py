"""The memory estimate as the choice sheet shows it: per phase and part, the closed form against the
tracker, the counted FLOPs, and what the estimate does not cover."""

from __future__ import annotations

from pilot.estimate.fake_tensor import NOT_COVERED, MemoryEstimate
from pilot.report import _bytes, markdown_table

GIB = 2**30


def _gib(value: float | None) -> str:
    """Bytes in the unit that reads best (KiB for a tiny model, GiB for a large one)."""
    return "" if value is None else _bytes(value)


def breakdown_rows(estimate: MemoryEstimate):
    """(phase, part, breakdown at that part's own peak): the forward/backward and the optimizer step
    of an update each have their peak; activations show at the first, optimizer temporaries at the second."""
    for p in estimate.phases:
        for part, b in (p.moments or {p.during: p.breakdown}).items():
            yield p, part, b


def estimate_lines(estimate: MemoryEstimate) -> list[str]:
    s = estimate.settings
    lines = [
        f"Model `{s['model']}`: {estimate.parameters:,} parameters; micro-batch {s['micro_batch']} "
        f"(x {s['accumulation']} accumulation), evaluation micro-batch {s['eval_micro_batch']}, "
        f"sequence length {s['seq_len'] if s['seq_len'] is not None else 'n/a (fixed-size inputs)'}, "
        f"precision {s['precision']}, optimizer {s['optimizer']}, activation checkpointing "
        f"{'on' if s['activation_checkpointing'] else 'off'}. One replica; "
        + ("estimated on fake tensors (nothing allocated)" if estimate.fake else "measured on real tensors")
        + f" in {estimate.seconds:.1f} s, this process's peak RSS {estimate.host_rss_peak_bytes / GIB:.2f} GiB.",
        "",
    ]
    header = [
        "phase",
        "part",
        "peak",
        "parameters",
        "gradients",
        "optimizer state",
        "activations",
        "temporaries",
        "other",
    ]
    body = []
    for p, part, b in breakdown_rows(estimate):
        body.append(
            [
                p.phase,
                part + (" (phase peak)" if part == p.during and len(p.moments) > 1 else ""),
                _gib(b["total"]),
                _gib(b["parameters"]),
                _gib(b["gradients"]),
                _gib(b["optimizer_state"]),
                _gib(b["activations"]),
                _gib(b["temporaries"]),
                _gib(b["buffers"] + b["other"]),
            ]
        )
    lines += [markdown_table(header, body), ""]
    closed, state = estimate.closed_form, estimate.state_bytes
    lines += [
        "Closed form vs tracker (persistent state after an update): parameters "
        f"{closed['parameters']:,} B vs {state['parameters']:,} B "
        f"({'equal' if closed['parameters'] == state['parameters'] else 'DIFFERENT'}); optimizer state "
        f"{closed['optimizer_state']:,} B vs {state['optimizer_state']:,} B "
        f"({'equal' if closed['optimizer_state'] == state['optimizer_state'] else 'DIFFERENT'}). "
        "Gradients equal the parameters in size. The optimizer step's peak also holds the multi-tensor "
        "kernels' temporaries (counted under optimizer state).",
        f"Counted FLOPs: {estimate.flops_per_micro_batch / 1e12:.4g} TFLOP per training micro-batch "
        f"(forward + backward{' + recomputation' if s['activation_checkpointing'] else ''}), "
        f"{estimate.flops_per_eval_batch / 1e12:.4g} TFLOP per evaluation batch.",
        "",
    ]
    lines += [
        "Not covered by the estimate:",
        *[f"- {item}" for item in NOT_COVERED],
        *[f"- {n}" for n in estimate.notes],
        "",
    ]
    return lines
