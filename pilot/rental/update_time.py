"""A choice-sheet row's time per update: the pilot's measurement on the same setup, else counted
FLOPs over the GPU's peak at the declared utilisation plus the collectives over the catalog's link
bandwidth (``link_gbps``, vendor datasheet figures), labelled as an estimate."""

from __future__ import annotations

from typing import Any

from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.rental.catalog import Gpu

GIB = 2**30


def time_per_update(
    same_setup: bool,
    measured: Any,  # choice_sheet.Measured, or None
    estimate: MemoryEstimate,
    micro_batches: int,
    peak_tflops: float | None,
    setup: Any,  # choice_sheet._Setup
    gpu: Gpu,
    row: dict,
) -> tuple[float, str]:
    """Seconds per update and where they come from: the pilot's measurement on the same setup, else
    counted FLOPs over the GPU's peak at the declared utilisation, plus the communication."""
    if same_setup:
        return measured.seconds_per_update, f"measured in the pilot on {measured.device_name}"
    flops = estimate.flops_per_micro_batch * micro_batches
    seconds = flops / (peak_tflops * 1e12 * setup.utilisation)
    source = (
        f"estimate: {flops / 1e12:.3g} TFLOP per update per GPU (counted) / "
        f"({peak_tflops:g} TFLOP/s peak x {setup.utilisation:g} declared utilisation)"
    )
    if row["count"] > 1:
        talk, how = _communication(setup, row["count"], row["ranks"], micro_batches, gpu)
        seconds += talk
        source += f"; {how}"
    return seconds, source


def _communication(setup: Any, count: int, ranks: int, micro_batches: int, gpu: Gpu) -> tuple[float, str]:
    """Seconds per update of the collectives (ring algorithms: each GPU sends and receives (n-1)/n of
    the data per all-gather or reduce-scatter, twice that per all-reduce) over the catalog's link
    bandwidth, one direction; not overlapped with compute, so an upper bound."""
    share = (count - 1) / count
    if ranks > 1:  # FSDP: gathered parameters in the compute dtype, gradients reduced in fp32
        gathers = micro_batches * setup.gathers_per_micro_batch * setup.parameters * setup.compute_bytes
        reductions = (micro_batches if setup.sync_every_micro_batch else 1) * setup.trainable_parameters * 4
        volume, what = share * (gathers + reductions), "FSDP all-gathers and reduce-scatters"
    else:
        volume, what = 2 * share * setup.gradient_bytes, "DDP gradient all-reduce"
    if gpu.link_gbps is None:
        return 0.0, f"{what} ({volume / GIB:.1f} GiB per GPU) not included: no link_gbps in the catalog entry"
    seconds = volume / (gpu.link_gbps / 2 * 1e9)
    return seconds, (
        f"+ {what}: {volume / GIB:.1f} GiB per GPU over {gpu.link_gbps:g} GB/s (datasheet, both directions) "
        f"= {seconds:.3g} s, not overlapped with compute"
    )
