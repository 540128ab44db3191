"""The memory estimate as the choice sheet shows it: per phase and part, the closed form against the
tracker, the counted FLOPs, and what the estimate does not cover."""

from __future__ import annotations

from pilot.estimate.fake_tensor import NOT_COVERED, STEADY, MemoryEstimate
from pilot.text_table import byte_size, markdown_table

GIB = 2**30


def _gib(value: float | None) -> str:
    """Bytes in the unit that reads best (KiB for a tiny model, GiB for a large one)."""
    return "" if value is None else byte_size(value)


def breakdown_rows(estimate: MemoryEstimate):
    """(phase, part, breakdown at that part's own peak): the forward/backward and the optimizer step
    of an update each have their peak; activations show at the first, optimizer temporaries at the second."""
    for p in estimate.phases:
        for part, b in (p.moments or {p.during: p.breakdown}).items():
            yield p, part, b


def _parameter_counts(estimate: MemoryEstimate) -> str:
    frozen = estimate.parameters - estimate.trainable_parameters
    if not frozen:
        return f"{estimate.parameters:,} parameters, all trained"
    return (
        f"{estimate.parameters:,} parameters: {frozen:,} frozen (weights only: no gradient, no optimizer "
        f"state) + {estimate.trainable_parameters:,} trained"
    )


def _gradients_at_step(estimate: MemoryEstimate) -> int:
    """The tracker's gradients when the steady update's optimizer step peaks (every gradient held)."""
    steady = next(p for p in estimate.phases if p.phase == STEADY)
    return int((steady.moments.get("optimizer step") or steady.breakdown).get("gradients", 0))


def _closed_form_line(estimate: MemoryEstimate) -> str:
    """Each persistent term from counts alone against the tracker: they must be equal."""
    closed, state = estimate.closed_form, estimate.state_bytes
    tracked = {**state, "gradients": _gradients_at_step(estimate)}
    terms = [
        ("parameters", "parameters", "after an update"),
        ("optimizer state", "optimizer_state", "after an update"),
        ("gradients (trainable parameters only)", "gradients", "at the optimizer step"),
    ]
    compared = "; ".join(
        f"{label} {closed[key]:,} B vs {tracked[key]:,} B {when} ({'equal' if closed[key] == tracked[key] else 'DIFFERENT'})"
        for label, key, when in terms
    )
    padding = closed.get("padding")
    sharded = (
        f" Sharded: rank 0 holds ceil(rows / ranks) of every tensor; FSDP pads {padding:,} B over all ranks."
        if padding is not None
        else ""
    )
    return (
        f"Closed form vs tracker: {compared}. The optimizer step's peak also holds the multi-tensor "
        f"kernels' temporaries (counted under optimizer state).{sharded}"
    )


def whose(estimate: MemoryEstimate) -> str:
    """Whose memory the estimate is: one whole replica, or rank 0 of the FSDP ranks (per GPU)."""
    s = estimate.settings
    if s.get("strategy") == "fsdp" and s["replicas"] > 1:
        return f"rank 0 of {s['replicas']} FSDP ranks (per GPU)"
    return "one replica"


def estimate_lines(estimate: MemoryEstimate) -> list[str]:
    s = estimate.settings
    lines = [
        f"Model `{s['model']}`: {_parameter_counts(estimate)}; micro-batch {s['micro_batch']} "
        f"(x {s['accumulation']} accumulation), evaluation micro-batch {s['eval_micro_batch']}, "
        f"sequence length {s['seq_len'] if s['seq_len'] is not None else 'n/a (fixed-size inputs)'}, "
        f"precision {s['precision']}, optimizer {s['optimizer']}, activation checkpointing "
        f"{'on' if s['activation_checkpointing'] else 'off'}. {whose(estimate).capitalize()}; "
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
    lines += [
        _closed_form_line(estimate),
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


def checked_against(measured: MemoryEstimate, device_type: str) -> str:
    """What the pilot checked the estimate against, in words: the same tracker run on real tensors of
    ``device_type`` (a CPU-only machine's is no CUDA measurement, and was said as "measured"), with CUDA's
    ``max_memory_allocated`` beside it where one was read (``allocator_peak_bytes``; not gated)."""
    tracker = f"the same memory tracker run on real {device_type.upper()} tensors"
    peaks = [p.allocator_peak_bytes for p in measured.phases if p.allocator_peak_bytes]
    if not peaks:
        return f"{tracker}, not a CUDA measurement (none was taken: the pilot ran on {device_type})"
    return f"{tracker}; torch.cuda.max_memory_allocated ({byte_size(max(peaks))}) beside it, not gated"
