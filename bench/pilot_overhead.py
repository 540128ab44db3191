"""Benchmark: the engine with the pilot's instrumentation vs a bare hand-written PyTorch loop.

    python bench/pilot_overhead.py            # writes bench/results/pilot_overhead.json

Same model, data, optimizer, schedule, clipping and update order, in one
process. The loops run in interleaved blocks whose order rotates, so drift of
the machine's speed hits all alike; a second, identical bare loop (an A/A
control) shows how far noise alone moves the ratio. "Instrumented" = ``Trainer.train_step`` (whole-
update target count, scaler, metrics record) inside the pilot's phase
measurement (``MemoryProbe``: synchronise, RSS, peak-RSS reset), one phase per
5 updates as in the pilot's steady_steps phase (``--probe-every 1`` measures
every update: the worst case), plus one metrics.jsonl line per update. Headline: total throughput over all
rounds, engine / bare; per-round ratios show the machine's noise.
Target: ratio >= 0.97. 2 threads (``--threads``); about a minute on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import compose_config  # noqa: E402  (the same composition as the tests)

from pilot.engine.build import build_trainer  # noqa: E402
from pilot.engine.data_order import update_indices  # noqa: E402
from pilot.engine.optim import build_optimizer, build_scheduler  # noqa: E402
from pilot.engine.trainer import record_dict  # noqa: E402
from pilot.phases.probe import MemoryProbe  # noqa: E402


class BareLoop:
    """What a user would write by hand: collate, forward, loss/targets, backward, clip, step."""

    def __init__(self, cfg, trainer_for_data):
        torch.manual_seed(int(cfg.seed))
        from hydra.utils import instantiate

        self.task = trainer_for_data.task
        self.items = trainer_for_data.train_items
        self.plan = trainer_for_data.plan
        self.model = instantiate(cfg.model, _convert_="all")
        self.optimizer = build_optimizer(cfg.optim, self.model)
        self.scheduler = build_scheduler(cfg.optim, self.optimizer, self.plan.total_updates)
        self.micro = int(cfg.batch.micro_batch)
        self.clip = float(cfg.optim.grad_clip)
        self.seed = int(cfg.seed)
        self.update = 0

    def step(self) -> float:
        indices = update_indices(self.plan, self.seed, self.update)
        batches = [
            self.task.collate([self.items[i] for i in indices[s : s + self.micro]])
            for s in range(0, len(indices), self.micro)
        ]
        total = sum(int(self.task.target_count(b)) for b in batches)
        self.model.train()
        loss_value = 0.0
        for batch in batches:
            loss = self.task.loss_sum(self.task.forward(self.model, batch), batch) / total
            loss.backward()
            loss_value += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.update += 1
        return loss_value


class InstrumentedEngine:
    """Trainer.train_step inside the pilot's phase measurement, one phase per ``probe_every``
    updates (the pilot's steady_steps phase is 5 updates), and a metrics line per update."""

    def __init__(self, trainer, probe_every: int):
        self.trainer, self.probe_every = trainer, probe_every
        self.probe, self.sink = MemoryProbe(torch.device("cpu")), io.StringIO()
        self.done, self.start = 0, None

    def step(self) -> float:
        if self.done % self.probe_every == 0:
            self.start = self.probe.start()
        record = self.trainer.train_step()
        self.done += 1
        if self.done % self.probe_every == 0:
            self.probe.stop(self.start)
        self.sink.write(json.dumps({"kind": "train", **record_dict(record)}) + "\n")
        return record.loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=18, help="interleaved blocks per loop")
    parser.add_argument("--updates", type=int, default=20, help="updates per block")
    parser.add_argument(
        "--probe-every",
        type=int,
        default=5,
        help="updates per measured phase (5 = the pilot's steady_steps; 1 = worst case)",
    )
    parser.add_argument("--overrides", nargs="*", default=[], help="Hydra overrides of the variant")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (fixed: results comparable)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    total = args.rounds * args.updates + 5
    cfg = compose_config([f"budget.value={total}", *args.overrides])
    trainer = build_trainer(cfg)
    bare, bare_control = BareLoop(cfg, trainer), BareLoop(cfg, trainer)
    loops = {
        "engine": InstrumentedEngine(trainer, args.probe_every).step,
        "bare": bare.step,
        "bare_control": bare_control.step,
    }  # bare_control: an A/A run, the noise floor
    for _ in range(3):  # warm-up (allocator, optimizer state)
        for step in loops.values():
            step()
    names = list(loops)
    seconds = {name: 0.0 for name in names}
    round_ratios = []
    for block in range(args.rounds):
        elapsed = {}
        for name in names[block % 3 :] + names[: block % 3]:  # rotate who runs first
            started = time.perf_counter()
            for _ in range(args.updates):
                assert math.isfinite(loops[name]())
            elapsed[name] = time.perf_counter() - started
            seconds[name] += elapsed[name]
        round_ratios.append(elapsed["bare"] / elapsed["engine"])
    examples = args.rounds * args.updates * trainer.plan.examples_per_update
    quartiles = statistics.quantiles(round_ratios, n=4)
    result = {
        "variant": args.overrides or ["default"],
        "threads": torch.get_num_threads(),
        "rounds": args.rounds,
        "updates_per_round": args.updates,
        "examples_per_update": trainer.plan.examples_per_update,
        "probe_every": args.probe_every,
        "engine_examples_per_s": examples / seconds["engine"],
        "bare_examples_per_s": examples / seconds["bare"],
        # the headline: total throughput over all interleaved rounds, engine / bare
        "ratio": seconds["bare"] / seconds["engine"],
        # the same measurement between two identical bare loops: how far noise alone moves it
        "noise_floor_ratio": seconds["bare"] / seconds["bare_control"],
        "round_ratio_median": statistics.median(round_ratios),
        "round_ratio_q1": quartiles[0],
        "round_ratio_q3": quartiles[2],
        "target": 0.97,
        "torch": torch.__version__,
    }
    result["meets_target"] = result["ratio"] >= result["target"]
    suffix = "" if args.probe_every == 5 and not args.overrides else f"-probe{args.probe_every}"
    out = REPO / "bench" / "results" / f"pilot_overhead{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
