"""Benchmark: estimate a ~7B-parameter decoder on this machine without allocating it.

    python bench/estimate_7b.py          # writes bench/results/estimate_7b.json, < 2 min

The README's command (the built-in TinyGPT scaled by config to d_model 4096, 32 layers, 32
heads, vocabulary 32,000, sequence 2048: 6.71e9 parameters; micro-batch 1, bf16 autocast,
AdamW; every other setting the default, evaluation micro-batch 16 included), at 2 CPU threads:
1. the memory estimate of every phase on fake tensors, in this process (terms vs closed form),
   twice: the second is the A/A control of its time;
2. ``python -m pilot mode=estimate <the same overrides>`` as the README gives it, with a new
   estimate store (``PILOT_ESTIMATE_CACHE``): the whole command's wall time, choice sheet included
   (its FSDP rows are estimates of the same kind), first computing every estimate ("cold"), then
   the same command again ("warm": every estimate read from the store); then the cold command once
   more with a new store (the A/A control).
Targets (issues 7, 17): the estimate under 2 minutes and 4 GiB of RSS, parameter and optimizer
terms equal to the closed form, the README's command <= 12 s.
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

THREADS = 2
README_COMMAND = [  # README.md, "mode=estimate"
    "model.d_model=4096",
    "model.n_layer=32",
    "model.n_head=32",
    "model.vocab_size=32000",
    "data.max_len=2048",
    "precision=bf16",
    "batch.micro_batch=1",
]
OVERRIDES = ["run.device=cpu", f"run.threads={THREADS}", *README_COMMAND]


def time_the_command(run_dir: Path, store: Path) -> float:
    """The README's ``python -m pilot mode=estimate ...``, wall time of the whole process."""
    command = [sys.executable, "-m", "pilot", "mode=estimate", *OVERRIDES, f"hydra.run.dir={run_dir}"]
    env = {**os.environ, "PILOT_ESTIMATE_CACHE": str(store)}
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True, timeout=600, env=env)
    return time.perf_counter() - started


def closed_form_parameters(vocab: int, max_len: int, d: int, layers: int) -> int:
    return vocab * d + max_len * d + layers * (12 * d * d + 13 * d) + 2 * d + d * vocab


def main() -> None:
    started = time.perf_counter()
    import torch
    from hydra import compose, initialize_config_dir

    from pilot.config import register
    from pilot.estimate.fake_tensor import estimate_memory
    from pilot.rental.estimate_table import estimate_lines

    torch.set_num_threads(THREADS)
    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=OVERRIDES)
    estimate = estimate_memory(cfg)
    seconds = time.perf_counter() - started
    again = time.perf_counter()
    estimate_memory(cfg)  # the A/A control
    seconds_again = time.perf_counter() - again
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    n = closed_form_parameters(32000, 2048, 4096, 32)
    tensors = 2 + 32 * 12 + 2 + 1
    checks = {
        "parameters_equal": estimate.state_bytes["parameters"] == 4 * n,
        "optimizer_equal": estimate.state_bytes["optimizer_state"] == 8 * n + 4 * tensors,
        "under_2_minutes": seconds < 120,
        "under_4_gib_rss": rss < 4 * 2**30,
    }
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        command_seconds = [time_the_command(work / name, work / "store") for name in ("cold", "warm")]
        command_aa = time_the_command(work / "cold-aa", work / "store-aa")
    checks["readme_command_under_12_s"] = command_seconds[0] <= 12
    checks["readme_command_again_under_12_s"] = command_seconds[1] <= 12
    print("\n".join(estimate_lines(estimate)))
    print(
        f"the README's mode=estimate command: {command_seconds[0]:.1f} s wall computing every estimate (A/A "
        f"{command_aa:.1f} s), {command_seconds[1]:.1f} s again (the estimate store); the estimate alone "
        f"{estimate.seconds:.1f} s (A/A rerun {seconds_again:.1f} s, ratio {seconds_again / estimate.seconds:.2f})"
    )
    print(
        f"whole process: {seconds:.1f} s (imports included), peak RSS {rss / 2**30:.2f} GiB; "
        f"closed form {n:,} parameters; checks {checks}"
    )
    out = REPO / "bench" / "results" / "estimate_7b.json"
    out.write_text(
        json.dumps(
            {
                "overrides": OVERRIDES,
                "seconds_whole_process": seconds,
                "seconds_estimate": estimate.seconds,
                "seconds_estimate_aa": seconds_again,
                "seconds_readme_command": command_seconds[0],
                "seconds_readme_command_again": command_seconds[1],
                "seconds_readme_command_aa": command_aa,
                "peak_rss_bytes": rss,
                "parameters": estimate.parameters,
                "closed_form_parameters": n,
                "phases": {
                    p.phase: {"peak_bytes": p.peak_bytes, "during": p.during, **p.breakdown} for p in estimate.phases
                },
                "flops_per_micro_batch": estimate.flops_per_micro_batch,
                "checks": checks,
                "torch": __import__("torch").__version__,
            },
            indent=1,
        )
    )
    print(f"written: {out}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
