"""The reason column of a choice-sheet row: why it does not fit (naming the term that sets the peak),
or what a fitting row changes from the configuration."""

from __future__ import annotations

from typing import Any

from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.rental.estimate_table import _gib

GIB = 2**30
TERMS = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "buffers", "other")


def peak_terms(phase: Any) -> str:
    """What the peak of ``phase`` holds, largest term first: "optimizer state 18.8 GiB + parameters ...";
    terms under 1% of the peak are left out."""
    held = sorted(((phase.breakdown.get(key, 0), key) for key in TERMS), key=lambda t: -t[0])  # stable on ties
    shown = [f"{key.replace('_', ' ')} {_gib(value)}" for value, key in held if value > 0.01 * max(phase.peak_bytes, 1)]
    return " + ".join(shown)


def sharding_reason(setup: Any, state_need: float, ranks: int, precision: str) -> str:
    """Why the model states alone do not fit one GPU (FSDP: even at 1/ranks of them). ``precision`` is the
    row's: fp16 (a GPU without bf16) cannot be sharded by pilot, so the row does not point at more GPUs."""
    terms = (
        f"parameters {setup.param_bytes / GIB:.1f} + gradients {setup.gradient_bytes / GIB:.1f} + optimizer "
        f"{setup.optimizer_bytes / GIB:.1f}"
    )
    if ranks > 1:
        return (
            f"even sharded over {ranks} GPUs (FSDP), 1/{ranks} of the model states ({terms} GiB) needs "
            f"{state_need / GIB:.1f} GiB per GPU with margin and reserve: more GPUs, or a larger GPU"
        )
    needs = f"model states alone need {state_need / GIB:.1f} GiB ({terms}, with margin and reserve), more than one GPU holds"
    if precision == "fp16":
        return (
            f"{needs}; sharding them (FSDP) needs bf16 or fp32, and this GPU has no bf16 (its fp16 variant has no "
            "sharded gradient scaler): not with this GPU at this precision — another GPU; precision=fp32 shards, "
            "at twice the activations and compute: mode=estimate precision=fp32 says whether this GPU then fits"
        )
    return f"{needs}: they must be sharded (FSDP) over several GPUs — see this GPU's rows with more GPUs"


def no_fit_reason(setup: Any, smallest: tuple, replicas: int = 1) -> str:
    """Why even the smallest setting does not fit, naming the term that sets its peak (``replicas``: a DDP
    row's GPUs, each holding every model state, which sharding them would divide)."""
    need, estimate = smallest
    peak = estimate.peak_phase
    checkpointing = " with activation checkpointing" if True in setup.settings else ""
    if peak.during == "optimizer step":
        held = sum(peak.breakdown.get(k, 0) for k in ("parameters", "gradients", "optimizer_state"))
        shard = (
            f"; each of the {replicas} DDP replicas holds all of them, and sharded (FSDP) each GPU would hold about "
            f"1/{replicas}: mode=estimate with distributed=fsdp estimates this row sharded"
            if replicas > 1
            else ""
        )
        return (
            f"even micro-batch 1 needs {need / GIB:.1f} GiB, more than one GPU holds: the peak is the "
            f"optimizer step ({held / GIB:.1f} GiB of weights, gradients and optimizer state, activations "
            f"already freed), which activation checkpointing or a smaller micro-batch cannot lower{shard}"
        )
    if peak.phase == "eval_longest":
        return (
            f"even micro-batch 1{checkpointing} needs {need / GIB:.1f} GiB, more than one GPU holds: the peak is "
            f"the evaluation forward at micro-batch {peak.micro_batch} on the longest sequences "
            "(a smaller batch.eval_micro_batch lowers it)"
        )
    return (
        f"even micro-batch 1{checkpointing} needs {need / GIB:.1f} GiB, more than one GPU holds (the peak is "
        f"{peak.during} in {peak.phase}: {peak_terms(peak)}; the activations are one micro-batch of the "
        "longest sequences, and a shorter sequence would change the task)"
    )


def fit_notes(
    setup: Any,
    estimate: MemoryEstimate,
    peak_note: str,
    micro: int,
    per_replica: int,
    checkpointing: bool,
    precision_note: str,
) -> list[str]:
    """The reason column of a row that fits: where the peak is, and what differs from the configuration."""
    peak = estimate.peak_phase
    notes = [f"peak in {peak.phase} ({peak.during}): {peak_terms(peak)}"]
    if peak_note:
        notes.append(peak_note)
    if micro != setup.micro_batch:
        notes.append(
            f"micro-batch {setup.micro_batch} does not fit or does not divide; {micro} x {per_replica // micro} "
            f"keeps {setup.examples_per_update} examples per update"
        )
    if checkpointing and not setup.checkpointing:
        notes.append("needs activation checkpointing (~1/3 more compute; check it with +experiment=memory_variants)")
    if precision_note:
        notes.append(precision_note)
    return notes
