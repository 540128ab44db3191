"""Benchmark: the per-rank FSDP estimate (fake process group) against real gloo ranks, and at 7B.

    python bench/fsdp_estimate.py    # writes bench/results/fsdp_estimate.json (about 1.5 min here)

1. Three model sizes x 2 and 4 ranks: rank 0's peak per phase estimated on fake tensors and a
   fake process group, against the same tracker on real tensors on that many real gloo ranks
   running the engine's sharded update (``estimate_memory(fake=False)`` in each spawned rank).
2. The README's 7B configuration with ``distributed=fsdp distributed.replicas=8``: the estimate's
   seconds and this process's peak RSS, twice (A/A: the second run is the noise control), and
   rank 0's parameter and optimizer shards against the closed form (the whole model / 8, padded).

Every run at 2 torch threads. On a CUDA machine with several GPUs the same comparison against
``torch.cuda.max_memory_allocated`` per rank is still to be run (no such machine was lent).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench.estimate_7b import README_COMMAND  # noqa: E402 - the repository on the path first

THREADS = 2
SIZES = [  # (label, overrides)
    ("d64-L2-T96", ["model.d_model=64", "model.n_layer=2"]),
    (
        "d128-L4-T128-bf16-ckpt",
        ["model.d_model=128", "model.n_layer=4", "data.max_len=128", "precision=bf16", "memory=checkpointing"],
    ),
    ("d256-L4-T256-micro4", ["model.d_model=256", "model.n_layer=4", "data.max_len=256", "batch.micro_batch=4"]),
]
SEVEN_B = [*README_COMMAND, "distributed=fsdp", "distributed.replicas=8"]  # the README 7B, over 8 GPUs


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pilot.config import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=["run.device=cpu", f"run.threads={THREADS}", *overrides])


def measure_on_real_ranks(cfgs: list, out_path: str) -> None:
    """In each spawned gloo rank: rank 0's memory of every config, measured by the same tracker on real
    tensors through the engine's sharded update (one spawn for all sizes: imports once per rank)."""
    import torch
    import torch.distributed as dist

    from pilot.engine.distributed import init_from_env
    from pilot.estimate.fake_tensor import estimate_memory

    init_from_env("gloo", torch.device("cpu"))
    torch.set_num_threads(1)
    measured = [estimate_memory(cfg, fake=False) for cfg in cfgs]
    if dist.get_rank() == 0:
        peaks = [{p.phase: p.peak_bytes for p in m.phases} for m in measured]
        torch.save({"peaks": peaks, "state": measured[0].state_bytes}, out_path)  # rank 0's shards


def accuracy() -> list[dict]:
    import torch

    from pilot.engine.distributed import spawn
    from pilot.estimate.fake_tensor import estimate_memory

    rows = []
    for ranks in (2, 4):
        cfgs = [compose([*o, "distributed=fsdp", f"distributed.replicas={ranks}"]) for _, o in SIZES]
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            spawn(measure_on_real_ranks, (cfgs, f"{tmp}/real.pt"), ranks)
            real_s = time.perf_counter() - started
            real = torch.load(f"{tmp}/real.pt", weights_only=True)
        for (label, _), cfg, measured in zip(SIZES, cfgs, real["peaks"], strict=True):
            started = time.perf_counter()
            estimate = estimate_memory(cfg)
            fake_s = time.perf_counter() - started
            phases = {
                p.phase: {
                    "estimated": p.peak_bytes,
                    "measured": measured[p.phase],
                    "off": p.peak_bytes / measured[p.phase] - 1,
                }
                for p in estimate.phases
            }
            worst = max(abs(v["off"]) for v in phases.values())
            row = {"size": label, "ranks": ranks, "phases": phases, "worst_off": worst, "fake_seconds": fake_s}
            if label == SIZES[0][0]:
                row["state_equals_closed_form"] = real["state"] == estimate.state_bytes
            rows.append({**row, "real_seconds_all_sizes": real_s})
            print(f"{label:28s} {ranks} ranks: worst phase {worst:+.2%} off real gloo ranks; fake {fake_s:.1f} s")
    return rows


def seven_b() -> dict:
    """The 7B estimate in a process of its own (its peak RSS is that process's), twice."""
    code = (
        "import json, resource, sys, time; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[:1]\n"
        "from bench.fsdp_estimate import compose, SEVEN_B\n"
        "from pilot.estimate.fake_tensor import estimate_memory\n"
        "started = time.perf_counter(); e = estimate_memory(compose(SEVEN_B)); s = time.perf_counter() - started\n"
        "print(json.dumps({'seconds': s, 'rss_gib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,"
        " 'peak_gib': e.peak_bytes / 2**30, 'state': e.state_bytes, 'closed_form': e.closed_form,"
        " 'whole': e.whole_states, 'peak_phase': e.peak_phase.phase, 'during': e.peak_phase.during,"
        " 'breakdown_gib': {k: v / 2**30 for k, v in e.peak_phase.breakdown.items()}}))\n"
    )
    runs = []
    for _ in range(2):  # A/A
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", code, str(REPO)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": str(THREADS)},
        )
        run = json.loads(out.stdout.strip().splitlines()[-1])
        run["process_seconds"] = time.perf_counter() - started
        runs.append(run)
        print(
            f"7B, 8 FSDP ranks: estimate {run['seconds']:.1f} s ({run['process_seconds']:.1f} s whole process), "
            f"RSS {run['rss_gib']:.2f} GiB, peak {run['peak_gib']:.2f} GiB per GPU in {run['peak_phase']}"
        )
    first = runs[0]
    exact = all(first["state"][k] == first["closed_form"][k] for k in ("parameters", "optimizer_state"))
    print(f"7B rank 0 shards equal the closed form: {exact}; FSDP padding {first['closed_form']['padding']:,} B")
    return {"runs": runs, "shards_equal_closed_form": exact}


def main() -> None:
    import torch

    torch.set_num_threads(THREADS)
    started = time.perf_counter()
    results = {
        "threads": THREADS,
        "accuracy": accuracy(),
        "seven_b": seven_b(),
        "cuda": "not run: no machine with several GPUs was lent",
        "host_rss_gib_of_this_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    results["seconds"] = time.perf_counter() - started
    out = REPO / "bench" / "results" / "fsdp_estimate.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"{results['seconds']:.0f} s in all; {out}")


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
