"""The resume check: does a checkpoint, loaded in a *new process*, continue the same run?

1. reference: a fresh run trains n updates without interruption;
2. interrupted: a fresh run trains k updates and saves a checkpoint;
3. ``python -m pilot.phases.resume_check <dir>`` (a new process) rebuilds
   everything from the saved config, restores the checkpoint and trains to n;
4. compare what the task encodes in both processes (example by example, ``pilot.data.digest``), then
   update numbers, learning rates, the examples each update drew,
   losses and the final parameters. With tolerance 0 (CPU fp32) everything
   must be bit-identical; otherwise the declared rtol/atol applies.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.checkpoint import Checkpointer, restore_training_state
from pilot.child_process import JobRunner, NewProcess
from pilot.config.values import enum_value, resolve_device
from pilot.data.digest import batch_digests, encoded_digests, first_difference
from pilot.data.task import TaskData
from pilot.engine.build import build_model, build_trainer, seed_everything
from pilot.engine.distributed import DistContext, init_from_env, rank0_value, spawn
from pilot.engine.sharding import full_model_state, is_sharded
from pilot.engine.trainer import Trainer
from pilot.errors import INCOMPLETE, stopped_by, write_failure
from pilot.faults import fault_point
from pilot.weights_file import read_weights, write_weights


def trajectory(trainer: Trainer, until: int) -> list[dict[str, Any]]:
    """Per update to ``until``: its number, learning rate, loss, the examples drawn and a digest of
    each key of the tensors collated from them (``batches``: the task's own random draws show there)."""
    rows, collated = [], []
    draw = trainer.micro_batches

    def recorded(update: int) -> list[tuple]:
        pairs = draw(update)
        collated.append(batch_digests(pairs))
        return pairs

    trainer.micro_batches = recorded  # this trainer's own: the class's method is left as it is
    try:
        while trainer.updates_done < until:
            record = trainer.train_step()
            rows.append(
                {
                    "update": record.update,
                    "lr": record.lr,
                    "loss": record.loss,
                    "examples": list(trainer.last_example_ids),
                    "batches": collated[-1],
                }
            )
    finally:
        del trainer.micro_batches
    return rows


def fresh_trainer(
    cfg: DictConfig, task: TaskData, device: torch.device, ctx: DistContext, items: list[dict] | None = None
) -> Trainer:
    """A trainer as ``build_trainer`` makes one, after the task: every global generator seeded from ``seed``
    (NumPy's and Python's too: a collate drawing from them repeats), the model built, the training split
    encoded (or ``items``, the reference's: the same examples, however the task's encode draws)."""
    seed_everything(int(cfg.seed))
    return Trainer(cfg, task, build_model(cfg), device, ctx, train_items=items)


def new_task(cfg: DictConfig) -> TaskData:
    """The task as a new process builds it: this process's own was encoded by every check before (an encode
    drawing from a generator made in make_task, or the global ones, has drawn on since), a resumed run's is not."""
    return instantiate(cfg.data, _convert_="all")


def _weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    """The whole model's weights on the CPU (FSDP: gathered onto rank 0, a collective; empty elsewhere)."""
    return {k: v.detach().cpu().contiguous() for k, v in full_model_state(trainer.raw_model).items()}


def _same(a: float, b: float, rtol: float, atol: float) -> bool:
    if rtol == 0 and atol == 0:
        return a == b or (math.isnan(a) and math.isnan(b))
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def compare(
    reference: list[dict],
    resumed: list[dict],
    ref_weights: dict[str, torch.Tensor],
    res_weights: dict[str, torch.Tensor],
    rtol: float,
    atol: float,
) -> tuple[bool, str]:
    problems = []
    if [r["update"] for r in reference] != [r["update"] for r in resumed]:
        problems.append(f"update numbers {[r['update'] for r in resumed]} != {[r['update'] for r in reference]}")
    pairs = list(zip(reference, resumed))
    for key in ("lr", "loss"):
        bad = [a["update"] for a, b in pairs if not _same(a[key], b[key], rtol, atol)]
        if bad:
            problems.append(f"{key} differs at update(s) {bad}")
    bad = [a["update"] for a, b in pairs if a["examples"] != b["examples"]]
    if bad:
        problems.append(f"different examples drawn at update(s) {bad}")
    if ref_weights.keys() != res_weights.keys():
        problems.append("final parameters have different names")
    else:
        exact = rtol == 0 and atol == 0
        differ = [
            k
            for k in ref_weights
            if not (
                torch.equal(ref_weights[k], res_weights[k])
                if exact
                else torch.allclose(ref_weights[k], res_weights[k], rtol=rtol, atol=atol)
            )
        ]
        if differ:
            problems.append(f"final parameters differ ({len(differ)} tensors, e.g. {differ[0]})")
    rule = "bit-identical" if rtol == 0 and atol == 0 else f"within rtol={rtol}, atol={atol}"
    if problems:
        return False, "resumed run diverges from the uninterrupted one: " + "; ".join(problems)
    return True, (
        f"resumed in a new process after update {reference[0]['update'] - 1}: update numbers, "
        f"learning rates, examples drawn, losses and final parameters {rule} through update "
        f"{reference[-1]['update']}"
    )


NOISE_FACTOR = 10  # how far past the training's own run-to-run noise a resumed run may not go


Run = tuple[list[dict], dict[str, torch.Tensor]]  # a trajectory and its final weights


def noise_control(reference: Run, control: Run, resumed: Run, k: int, reason: str) -> tuple[str, str]:
    """After a resumed run that is not bit-identical to the reference, a second uninterrupted run from
    the same seed (``control``), in this process. Bit-identical to the reference: the difference is the
    resume's (fail). Otherwise the training is not reproducible here (kernels that sum in another order
    from run to run: several CPU threads, CUDA atomics), bit-identity cannot be checked, and the resume
    is judged against that noise: the same update numbers, learning rates and examples drawn, and
    losses and final parameters within ``NOISE_FACTOR`` times the control's distance, or one float32
    rounding step where that is larger (warn, saying so); further: fail."""
    if compare(*_pair(reference, control), 0.0, 0.0)[0]:
        return (
            "fail",
            f"{reason} (a second uninterrupted run here is bit-identical to the first: the difference is the resume's)",
        )
    rows, weights = resumed
    if exact := _exact_differences(reference[0][k:], rows, reference[1], weights):
        return "fail", f"{reason} ({exact}, which no floating-point noise changes)"
    if redrawn := _redrawn(reference[0], control[0]):
        return "warn", (
            f"two uninterrupted runs from the same seed collate other tensors from the same examples ({redrawn}): "
            "the task draws random numbers from a generator of its own (a torch.Generator, NumPy Generator or "
            "random.Random made at import or in make_task), which the run's seed does not set and its checkpoint "
            "does not hold, so no run repeats and a resumed run draws other values than the run it continues. "
            f"The resume after update {k} keeps the update numbers, learning rates and examples drawn; whether it "
            "is otherwise the same run cannot be checked. Fix: draw from torch's, NumPy's or Python's global "
            "generator (pilot seeds them from `seed` and every checkpoint holds their state)"
        )
    noise, rounding = _distance(reference, control), _rounding(reference)
    drift = _distance((reference[0][k:], reference[1]), resumed)
    said = (
        f"a second uninterrupted run from the same seed differs from the first by up to {noise[0]:.2g} in a loss "
        f"and {noise[1]:.2g} in a parameter; the resumed run by {drift[0]:.2g} and {drift[1]:.2g}"
    )
    if any(r > n for r, n in zip(rounding, noise)):
        said += f" (noise taken as at least one float32 rounding step: {rounding[0]:.2g} and {rounding[1]:.2g})"
    if all(d <= NOISE_FACTOR * max(n, r) for d, n, r in zip(drift, noise, rounding)):
        return "warn", (
            f"the training is not bit-reproducible here (kernels whose floating-point sums change order from run to "
            f"run: several CPU threads, CUDA atomics): {said}. The resume after update {k} keeps the update numbers, "
            f"learning rates and examples drawn and stays within {NOISE_FACTOR}x that noise: it continues the run, "
            "but bit-identity cannot be checked. Fix for a run that reproduces to the bit: run.threads=1 on a CPU, "
            "torch.use_deterministic_algorithms(True) on a GPU"
        )
    return "fail", f"{reason}; beyond the training's own noise: {said} (more than {NOISE_FACTOR}x)"


def _redrawn(first: list[dict], second: list[dict]) -> str:
    """Where two runs drew the same examples but collated other tensors from them: the first such update
    and its keys; empty when nowhere."""
    for a, b in zip(first, second):
        mine, theirs = a.get("batches") or {}, b.get("batches") or {}
        if a["examples"] == b["examples"] and mine != theirs:
            keys = sorted(key for key in mine.keys() | theirs.keys() if mine.get(key) != theirs.get(key))
            return f"first at update {a['update']}: {', '.join(keys)}"
    return ""


def _pair(first: Run, second: Run) -> tuple:
    return first[0], second[0], first[1], second[1]


def _exact_differences(reference: list[dict], resumed: list[dict], ref_weights: dict, res_weights: dict) -> str:
    """What differs that no floating-point noise moves: update numbers, learning rates, examples drawn, names."""
    problems = []
    if [r["update"] for r in reference] != [r["update"] for r in resumed]:
        problems.append("update numbers differ")
    for key, what in (("lr", "learning rates"), ("examples", "examples drawn")):
        if [r[key] for r in reference] != [r[key] for r in resumed]:
            problems.append(f"{what} differ")
    if ref_weights.keys() != res_weights.keys():
        problems.append("final parameter names differ")
    return "; ".join(problems)


def _rounding(run: Run) -> tuple[float, float]:
    """One float32 rounding step of the run's largest loss and parameter: the least noise a training
    that is not bit-reproducible has, though a second run may by chance repeat one of them exactly
    (its losses equal, its parameters not: then every loss of the resumed run that moved was "beyond")."""
    eps = float(torch.finfo(torch.float32).eps)
    losses = [abs(r["loss"]) for r in run[0] if math.isfinite(r["loss"])]
    values = [float(t.double().abs().nan_to_num(0.0).max()) for t in run[1].values() if t.numel()]
    return eps * max(losses, default=0.0), eps * max(values, default=0.0)


def _distance(first: Run, second: Run) -> tuple[float, float]:
    """The largest difference of a loss (matching updates) and of a final parameter value (inf for a NaN on one side)."""
    losses = [
        abs(a["loss"] - b["loss"]) if math.isfinite(a["loss"] - b["loss"]) else math.inf
        for a, b in zip(first[0], second[0])
        if not (math.isnan(a["loss"]) and math.isnan(b["loss"]))
    ]
    values = [
        float((first[1][name].double() - second[1][name].double()).abs().nan_to_num(math.inf).max())
        for name in first[1]
        if first[1][name].numel() and name in second[1]
    ]
    return max(losses, default=0.0), max(values, default=0.0)


def run_resume_check(
    cfg: DictConfig,
    device: torch.device,
    work_dir: Path,
    timeout_s: int = 600,
    runner: JobRunner | None = None,
    ctx: DistContext = DistContext(),
) -> tuple[str, str]:
    """Reference and interrupted runs here; the resume in a new process (``runner``: a process
    started for it, or one started earlier that holds none of this run's state). Under FSDP every
    rank calls it: the two runs are sharded as in training, the resume runs as the same number of
    ranks in new processes, and every rank returns rank 0's verdict: pass, fail, or warn when the
    training itself is not bit-reproducible here and the resume stays within its noise (``noise_control``)."""
    settings = cfg.pilot.resume_check
    k, n = int(settings.updates_before), int(settings.updates_total)
    if not 0 < k < n:
        return "fail", f"pilot.resume_check needs 0 < updates_before < updates_total, got {k} and {n}"
    work_dir = Path(work_dir)
    if ctx.is_main:
        work_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, work_dir / "config.yaml", resolve=True)
    task = new_task(cfg)
    reference_trainer = fresh_trainer(cfg, task, device, ctx)
    items = reference_trainer.train_items  # encoded as a new process's build_trainer encodes them
    reference = trajectory(reference_trainer, n)
    interrupted = fresh_trainer(cfg, task, device, ctx, items)
    trajectory(interrupted, k)
    Checkpointer(work_dir / "checkpoints", cfg, keep_last=1).save(interrupted, writes=ctx.is_main)
    reference_weights = _weights(reference_trainer)
    encoded = encoded_digests(items) if ctx.is_main else []  # kept here, compared with the new process's
    outcome = None
    if ctx.is_main:
        resumed = _resume(cfg, work_dir, timeout_s, runner, encoded)
        compared = isinstance(resumed, tuple)
        outcome = (
            (*compare(reference[k:], resumed[0], reference_weights, resumed[1], *_tolerance(cfg)), True)
            if compared
            else (False, resumed, False)
        )
    passed, reason, compared = rank0_value(outcome, ctx)
    if isinstance(reason, Killed):  # nothing was compared: not a resume that failed
        return INCOMPLETE, str(reason)
    if passed or not compared or _tolerance(cfg) != (0.0, 0.0):
        return ("pass" if passed else "fail"), reason
    control_trainer = fresh_trainer(cfg, task, device, ctx, items)  # every rank: under FSDP a collective
    control = trajectory(control_trainer, n)
    control_weights = _weights(control_trainer)
    verdict = None
    if ctx.is_main:
        verdict = noise_control((reference, reference_weights), (control, control_weights), resumed, k, reason)
    return tuple(rank0_value(verdict, ctx))


def _tolerance(cfg: DictConfig) -> tuple[float, float]:
    return float(cfg.pilot.resume_check.rtol), float(cfg.pilot.resume_check.atol)


class Killed(str):
    """Why there is no resumed run when its process was killed by a signal: the check is incomplete."""


def _resume(
    cfg: DictConfig, work_dir: Path, timeout_s: int, runner: JobRunner | None, encoded: list[dict[str, str]]
) -> tuple[list[dict], dict[str, torch.Tensor]] | str:
    """The resumed run's trajectory and final weights, from a new process; or why there are none."""
    until = int(cfg.pilot.resume_check.updates_total)
    # same CPU thread count in the child: a different count changes the order of float
    # reductions, and so the last bits, without anything being wrong with the resume
    completed = (runner or NewProcess()).run(
        "pilot.phases.resume_check", [str(work_dir), str(until), str(torch.get_num_threads())], timeout_s
    )
    if completed.returncode != 0:
        where = work_dir / "resume_check.error.txt"
        said = "the resuming process failed: " + write_failure(where, completed.stderr, completed.returncode)
        return Killed(said) if stopped_by(completed.returncode) is not None else said
    resumed = json.loads((work_dir / "resumed.json").read_text())
    theirs = work_dir / "resumed_encoded.json"
    there = json.loads(theirs.read_text())
    theirs.unlink(missing_ok=True)  # scratch: its digests are compared here, not kept
    if (differs := first_difference(encoded, there)) is not None:
        return (
            f"the task built in the new process encodes other data: {differs}. Its data or labels depend on "
            "the process (e.g. class ids from set() order, which PYTHONHASHSEED changes; a tokenizer or "
            "vocabulary trained inside make_task, whose ties fall in hash order; an unseeded random generator "
            "in the task): a resumed run trains on other examples. Fix: build them deterministically (sorted "
            "class names, a seeded generator, a tokenizer trained once and saved, then loaded)"
        )
    return resumed, read_weights(work_dir / "resumed.safetensors")


def resume_in_this_process(work_dir: Path, until: int, threads: int) -> None:
    """The new process: everything comes from disk, nothing from the parent's memory. FSDP with N
    ranks: N new processes (a new process group), as many as saved the checkpoint."""
    fault_point("resume")  # tests: the resuming process killed before it answered
    cfg = OmegaConf.load(work_dir / "config.yaml")
    replicas = int(cfg.distributed.replicas)
    if is_sharded(cfg) and replicas > 1:
        spawn(resumed_rank, (work_dir, until, threads, True), replicas)
    else:
        resumed_rank(work_dir, until, threads, False)


def resumed_rank(work_dir: Path, until: int, threads: int, spawned: bool) -> None:
    """One rank of the resumed run (``spawned``: of a new process group; else the only process —
    which may have inherited a rank's variables from the pilot's phases, and ignores them)."""
    torch.set_num_threads(threads)
    cfg = OmegaConf.load(work_dir / "config.yaml")
    ctx = init_from_env(enum_value(cfg.distributed.backend), resolve_device(cfg)) if spawned else DistContext()
    trainer = build_trainer(cfg, ctx)
    found = Checkpointer(work_dir / "checkpoints", cfg).latest_valid()
    if found is None:
        raise SystemExit(f"no valid checkpoint in {work_dir / 'checkpoints'}")
    restore_training_state(trainer, found[1])
    rows = trajectory(trainer, until)
    weights = _weights(trainer)
    if ctx.is_main:
        (work_dir / "resumed.json").write_text(json.dumps(rows))
        (work_dir / "resumed_encoded.json").write_text(
            json.dumps(encoded_digests(trainer.train_items), separators=(",", ":"))
        )
        write_weights(weights, work_dir / "resumed.safetensors")  # shared (tied) tensors once


if __name__ == "__main__":  # the module's own functions, so that spawned ranks can unpickle them by name
    from pilot.phases.resume_check import resume_in_this_process

    resume_in_this_process(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
