"""Benchmark: the fake-tensor estimate against measurements, for several model sizes.

    python bench/estimate_accuracy.py    # writes bench/results/estimate_accuracy-<device>.json

On a CUDA machine each size is also run for real on the GPU, and the estimate of
every phase is compared with ``torch.cuda.max_memory_allocated`` over that phase
(the caching allocator's peak: what decides an out-of-memory error) as well as
with the tracker on real tensors. On a CPU-only machine the comparison is with
the tracker on real CPU tensors only (the tests hold it within 10%). 2 threads. A/A control: the
fake estimate of each size runs twice and must give the same bytes (a difference would be noise
in the method itself). Under 2 minutes on 2 CPU cores.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SIZES = [  # (label, overrides)
    ("d64-L2-T96-fp32", []),
    ("d256-L4-T256-bf16", ["model.d_model=256", "model.n_layer=4", "data.max_len=256", "precision=bf16"]),
    (
        "d512-L8-T512-bf16-ckpt",
        [
            "model.d_model=512",
            "model.n_layer=8",
            "model.n_head=8",
            "data.max_len=512",
            "precision=bf16",
            "memory=checkpointing",
        ],
    ),
    (
        "d1024-L8-T1024-bf16-micro4",
        [
            "model.d_model=1024",
            "model.n_layer=8",
            "model.n_head=16",
            "model.vocab_size=32000",
            "data.max_len=1024",
            "precision=bf16",
            "batch.micro_batch=4",
            "batch.eval_micro_batch=4",
        ],
    ),
]


def main() -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pilot.config import register
    from pilot.estimate.fake_tensor import estimate_memory

    register()
    torch.set_num_threads(2)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sizes = SIZES if device == "cuda" else SIZES[:3]  # the largest is minutes of real compute on 2 CPU cores
    results = []
    begun = time.perf_counter()
    for label, overrides in sizes:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose(config_name="config", overrides=["run.device=cpu", *overrides])
        started = time.perf_counter()
        estimate = estimate_memory(cfg)
        again = estimate_memory(cfg)  # the A/A control
        measured = estimate_memory(cfg, fake=False, device=device)
        for est, est_again, real in zip(estimate.phases, again.phases, measured.phases):
            row = {
                "aa_estimate_difference_bytes": est_again.peak_bytes - est.peak_bytes,
                "size": label,
                "phase": est.phase,
                "parameters": estimate.parameters,
                "estimated_bytes": est.peak_bytes,
                "tracker_real_bytes": real.peak_bytes,
                "vs_tracker": est.peak_bytes / real.peak_bytes - 1,
                "allocator_peak_bytes": real.allocator_peak_bytes,
                "vs_allocator": (est.peak_bytes / real.allocator_peak_bytes - 1) if real.allocator_peak_bytes else None,
            }
            results.append(row)
            allocator = (
                f", CUDA max_memory_allocated {row['allocator_peak_bytes'] / 2**20:,.1f} MiB "
                f"({row['vs_allocator']:+.1%})"
                if row["allocator_peak_bytes"]
                else ""
            )
            print(
                f"{label:28s} {est.phase:13s} estimate {est.peak_bytes / 2**20:10,.1f} MiB, tracker on real "
                f"tensors {real.peak_bytes / 2**20:10,.1f} MiB ({row['vs_tracker']:+.2%}){allocator}"
            )
        print(f"  ({time.perf_counter() - started:.1f} s)")
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    out = REPO / "bench" / "results" / f"estimate_accuracy-{device}.json"
    seconds = time.perf_counter() - begun
    out.write_text(
        json.dumps(
            {"device": name, "torch": torch.__version__, "threads": 2, "seconds": seconds, "rows": results}, indent=1
        )
    )
    print(
        f"{seconds:.0f} s in all; A/A: every estimate repeated to the byte: "
        f"{all(r['aa_estimate_difference_bytes'] == 0 for r in results)}"
    )
    print(f"written: {out}")


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
