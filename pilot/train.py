"""``train(cfg, run_dir)``: one training run of a composed variant, start to finish.

1. validate the whole config (one error listing every problem);
2. start the replicas (spawned, or joined from torchrun/SLURM variables);
3. build the task and the model from their ``_target_``;
4. log the batch arithmetic once; train to the budget; evaluate;
5. write run.json and metrics.jsonl (rank 0).
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.checkpoint import (
    checkpoint_path,
    clean_temporary_files,
    defining_config,
    differing_keys,
    fault_point,
    fault_requested,
    first_line,
    latest_valid_checkpoint,
    restore_training_state,
    save_checkpoint,
    training_state_non_finite,
)
from pilot.closing import close_run, write_reproduce
from pilot.config.validate import validate
from pilot.config.values import enum_value, resolve_device
from pilot.engine.build import build_trainer, configure_threads
from pilot.engine.distributed import DistContext, all_reduce_sum, init_from_env, launched_externally, spawn
from pilot.engine.preemption import InterruptWatch, PreemptionWatch
from pilot.engine.trainer import Trainer, record_dict
from pilot.errors import DiskFull, ResumeRefused, RunFinished
from pilot.phases.memory import peak_memory
from pilot.phases.train_phases import TrainPhases
from pilot.predictions import write_predictions
from pilot.run_record import RunDirectoryLock, RunRecord, read_run_json, write_json_atomic

log = logging.getLogger("pilot")


# sections whose values live in the restored state (weights, optimizer and schedule, data order,
# precision, replicas): a resume cannot change them, even forced, without recording a setting it
# did not use. The others (budget, loop, memory, ...) can be forced and take effect from the resume.
FIXED_ON_RESUME = ("model", "data", "batch", "optim", "precision", "distributed", "seed")


def _fixed_on_resume(difference: str) -> bool:
    key = difference.split(":", 1)[0]
    return any(key == section or key.startswith(section + ".") for section in FIXED_ON_RESUME)


def refuse_finished_run(cfg: DictConfig, run_dir: Path) -> None:
    """A run that ended (``ok``, or ``diverged``) is not trained again in its directory."""
    if not cfg.checkpoint.resume or not (run_dir / "run.json").exists():
        return
    data = read_run_json(run_dir)
    status, run_id = data.get("status"), data.get("run_id")
    again = (
        "To run this variant again, start it without hydra.run.dir (a new directory and run_id; "
        "this run becomes its parent_id)."
    )
    if status == "ok":
        raise RunFinished(
            f"{run_dir} holds a finished run ({run_id}: status ok, stop cause "
            f"{data.get('stop_cause')}, {data.get('updates_done')} updates). Nothing was "
            f"done and nothing was touched. {again}",
            exit_code=0,
        )
    if status == "diverged" and not cfg.checkpoint.continue_diverged:
        raise RunFinished(
            f"{run_dir} holds a diverged run ({run_id}: {data.get('stop_cause')}); it stays "
            f"diverged and nothing was touched. {again} To continue it from its last finite "
            "checkpoint instead, add checkpoint.continue_diverged=true (recorded in run.json).",
            exit_code=1,
        )


def find_resume_state(cfg: DictConfig, run_dir: Path, is_main: bool) -> tuple[dict | None, dict]:
    """The newest valid checkpoint's state (or None) and what to record about the resume."""
    if not cfg.checkpoint.resume:
        return None, {}
    ckpt_dir = run_dir / "checkpoints"
    cleaned = clean_temporary_files(ckpt_dir) if is_main else []
    if cleaned:
        log.warning(
            "removed %d leftover temporary checkpoint file(s) of an interrupted save: %s",
            len(cleaned),
            ", ".join(cleaned),
        )
    found = latest_valid_checkpoint(ckpt_dir)
    if found is None:
        note = {"from_update": 0, "cleaned_temporary_files": cleaned}
        if (run_dir / "run.json").exists():
            note["note"] = "no valid checkpoint: restarted from the beginning"
            return None, note
        return None, {}
    path, state = found
    differences = differing_keys(state["defining_config"], defining_config(cfg))
    fixed = [d for d in differences if _fixed_on_resume(d)]
    if fixed:
        raise ResumeRefused(
            f"{path} was written under another config, and these keys cannot change on resume (their "
            "values live in the restored weights, optimizer, schedule, data order or precision; a "
            "record would claim a setting the run did not use):\n  "
            + "\n  ".join(fixed)
            + "\nFix: use a new run directory for the new values (leave out hydra.run.dir), or restore them."
        )
    if differences and not cfg.checkpoint.force_resume:
        raise ResumeRefused(
            f"{path} was written under another config; resuming would mix two runs. Differing keys:\n  "
            + "\n  ".join(differences)
            + "\nFix: use a new run directory, restore these values, or "
            "set checkpoint.force_resume=true to continue anyway (recorded in run.json)."
        )
    note = {
        "from_update": int(state["position"]["updates_done"]),
        "checkpoint": path.name,
        "cleaned_temporary_files": cleaned,
    }
    if state.get("torch_threads") not in (None, torch.get_num_threads()):
        note["threads_changed"] = (
            f"{state['torch_threads']} -> {torch.get_num_threads()} CPU threads: "
            "the run continues correctly but not bit-identically"
        )
    if differences:
        note["forced_despite"] = differences
        note["takes_effect_from_update"] = note["from_update"] + 1
    log.info("resuming from %s (update %d)", path, note["from_update"])
    return state, note


def is_diverged(stop_cause: str | None) -> bool:
    return bool(stop_cause) and (stop_cause == "non_finite_loss" or stop_cause.startswith("diverged"))


class StopRules:
    """The stop causes declared in ``cfg.loop`` before the run: divergence and early stopping."""

    def __init__(self, cfg: DictConfig):
        self.factor = float(cfg.loop.divergence_factor)
        self.patience = int(cfg.loop.early_stop_patience)
        self.first_loss: float | None = None
        self.best = math.inf
        self.since_best = 0

    def replay(self, rows: list) -> StopRules:
        """A resumed run's rules continue from its recorded rows (first loss, validation history)."""
        for row in rows:
            loss = row.get("loss")
            if not isinstance(loss, (int, float)):
                continue
            if row.get("kind") == "train" and self.first_loss is None:
                self.first_loss = float(loss)
            elif row.get("kind") == "val":
                self.after_validation(float(loss), int(row.get("update", 0)))
        return self

    def after_update(self, loss: float, update: int) -> str | None:
        if self.first_loss is None:
            self.first_loss = loss
        if not math.isfinite(loss):
            return f"diverged: non-finite loss {loss} at update {update}"
        if self.factor > 0 and loss > self.factor * self.first_loss:
            return f"diverged: loss {loss:.4g} > {self.factor:g} x first loss {self.first_loss:.4g} at update {update}"
        return None

    def after_validation(self, loss: float, update: int) -> str | None:
        if loss < self.best:
            self.best, self.since_best = loss, 0
            return None
        self.since_best += 1
        if self.patience and self.since_best >= self.patience:
            return (
                f"early_stop: no validation improvement for {self.since_best} points "
                f"(best {self.best:.4g}) at update {update}"
            )
        return None


class TrainingRun:
    """One training run on one replica: ``setup``, ``on_update`` after every update, ``finish``.

    Rank 0 owns the run directory (lock, run.json, metrics, checkpoints, phases.csv, closing).
    Whatever ends the run — budget, divergence, early stop, a signal, preemption, disk full, an
    exception — ``run`` records what actually happened, and ``close`` writes it.
    """

    def __init__(self, cfg: DictConfig, run_dir: str, overrides: list, sweep_dir: str | None = None):
        self.cfg, self.run_path, self.overrides = cfg, Path(run_dir), overrides
        self.sweep_dir = Path(sweep_dir) if sweep_dir else None
        self.ckpt_dir = self.run_path / "checkpoints"
        self.ctx = (
            init_from_env(enum_value(cfg.distributed.backend), resolve_device(cfg))
            if launched_externally()
            else DistContext()
        )
        self.trainer: Trainer | None = None
        self.record: RunRecord | None = None
        self.lock = RunDirectoryLock(self.run_path) if self.ctx.is_main else None
        self.status, self.stop_cause, self.error = "ok", None, None
        self.extra: dict = {}
        self.preemption, self.interrupts = PreemptionWatch(), InterruptWatch()
        self.hand_over = False
        self.eval_items: list = []
        self.update_seconds: list = []
        self.rules = StopRules(cfg)
        self.phases = TrainPhases(
            resolve_device(cfg),
            self.ctx.rank,
            {
                "micro_batch": int(cfg.batch.micro_batch),
                "accumulation": int(cfg.batch.accumulation),
                "replicas": int(cfg.distributed.replicas),
                "precision": enum_value(cfg.precision.dtype),
                "activation_checkpointing": bool(cfg.memory.activation_checkpointing),
            },
        )

    # ------------------------------------------------------------------ lifecycle
    def run(self) -> None:
        try:
            self.setup()
            stop_cause = self.trainer.train(on_update=self.on_update)
            self.finish(stop_cause)
        except KeyboardInterrupt:  # a second signal (or no watch installed): stop at once
            signal_name = self.interrupts.received or "SIGINT"
            self._interrupted(signal_name, "at once, without a checkpoint of the update in progress")
        except DiskFull as exc:
            self.status, self.stop_cause, self.error = "failed", "disk_full", str(exc)
            self.phases.end("fail", f"disk full: {exc}"[:300])
            raise
        except torch.OutOfMemoryError as exc:
            updates = self.trainer.updates_done if self.trainer else 0
            self.status, self.stop_cause = "oom", f"out of memory at update {updates + 1}"
            self.error = f"{type(exc).__name__}: {first_line(exc, 300)}"
            self.phases.end("oom", f"out of memory in {self.phases.open_phase}: {self.error}")
            raise
        except RunFinished:
            self.status = None  # nothing was started: nothing is recorded
            raise
        except Exception as exc:  # recorded, then re-raised: the failure must stay visible
            self.status, self.stop_cause, self.error = "failed", "exception", f"{type(exc).__name__}: {exc}"
            self.phases.end("fail", self.error[:300])
            raise
        finally:
            self.close()

    def setup(self) -> None:
        cfg = self.cfg
        if self.lock is not None:
            self.lock.acquire()
            refuse_finished_run(cfg, self.run_path)
        threads = configure_threads(cfg)  # before the resume: the count is compared with the checkpoint's
        state, resume_note = find_resume_state(cfg, self.run_path, self.ctx.is_main)
        # run.json exists (status "running") before anything can fail, so a failure is recorded
        if self.ctx.is_main:
            self.record = RunRecord(
                self.run_path, cfg, self.overrides, resume=resume_note or None, sweep_dir=self.sweep_dir
            )
            if state is not None:
                self.rules.replay(self.record.rows())
        self.preemption.install()
        self.interrupts.install()
        if self.ctx.world_size != cfg.distributed.replicas:
            raise ValueError(
                f"distributed.replicas={cfg.distributed.replicas} but the launcher "
                f"started {self.ctx.world_size} process(es). Fix: make them agree."
            )
        self.phases.begin("build_model")
        self.trainer = build_trainer(cfg, self.ctx)
        self.eval_items = self.trainer.task.encoded("val")[: int(cfg.loop.eval_examples)]
        if state is not None:
            restore_training_state(self.trainer, state)
        parameters = sum(p.numel() for p in self.trainer.raw_model.parameters())
        self.phases.end(
            detail=f"{parameters:,} parameters"
            + (f"; resumed at update {self.trainer.updates_done}" if state is not None else "")
        )
        if self.record is not None:
            _record_setup(cfg, self.trainer, self.record, self.run_path, threads)
        self.phases.begin("first_step", examples=self.trainer.plan.examples_per_update)

    def on_update(self, row) -> str | None:
        """After every update: metrics, stop rules, validation, checkpoint, signals — in that order,
        so a checkpoint at a validation update is written after its validation row."""
        trainer, record, every = self.trainer, self.record, int(self.cfg.checkpoint.every)
        if self.phases.open_phase == "first_step":
            self.phases.end(
                detail=f"update {row.update}: loss {row.loss:.4g}, {row.seconds:.3g} s", examples=row.examples
            )
            self.phases.begin("steady_steps")
        else:
            self.update_seconds.append(row.seconds)
        if record is not None:
            record.log_metrics({"kind": "train", **record_dict(row)})
        cause = self.rules.after_update(row.loss, row.update)
        self._poison_weights_if_asked()
        eval_every = int(self.cfg.loop.eval_every)
        if cause is None and eval_every and row.update % eval_every == 0 and row.update < trainer.plan.total_updates:
            cause = self.rules.after_validation(self.validate_now()["loss"], row.update)
        if not is_diverged(cause) and every and trainer.updates_done % every == 0:
            cause = self.save_checkpoint() or cause
        fault_point("update", trainer.updates_done)
        fault_point("exception", trainer.updates_done)
        return cause or self._agreed_signal()

    def _poison_weights_if_asked(self) -> None:
        """Test hook (PILOT_FAULT=nan_weights@<update>): NaN weights after a finite loss."""
        if fault_requested("nan_weights", self.trainer.updates_done):
            with torch.no_grad():
                next(self.trainer.raw_model.parameters()).fill_(float("nan"))

    def save_checkpoint(self) -> str | None:
        """Save (rank 0) unless the state holds NaN/inf: then the run has diverged (the returned cause)."""
        bad = training_state_non_finite(self.trainer)
        if bad:
            return (
                f"diverged: non-finite values in {len(bad)} tensor(s) ({', '.join(bad[:2])}) after "
                f"update {self.trainer.updates_done}; not saved as a checkpoint"
            )
        if self.record is not None:
            save_checkpoint(self.trainer, self.cfg, self.ckpt_dir, int(self.cfg.checkpoint.keep_last))
        return None

    def _agreed_signal(self) -> str | None:
        """'preempted' or 'interrupted' when any replica was signalled (all replicas stop together)."""
        flags = torch.tensor([float(self.preemption.requested), float(self.interrupts.received is not None)])
        if self.ctx.is_distributed:
            flags = all_reduce_sum(flags.to(self.trainer.device), self.ctx).cpu()
        if flags[0] > 0:
            return "preempted"
        return "interrupted" if flags[1] > 0 else None

    def validate_now(self) -> dict:
        evaluation = self.trainer.evaluate("val", self.eval_items)
        if self.record is not None:
            self.record.log_metrics({"kind": "val", "update": self.trainer.updates_done, **evaluation})
        return evaluation

    def finish(self, stop_cause: str) -> None:
        """After the last update: close the phases, then checkpoint, final validation and closing."""
        cfg, trainer, record, phases = self.cfg, self.trainer, self.record, self.phases
        self.stop_cause = stop_cause
        diverged = is_diverged(stop_cause)
        if phases.open_phase == "steady_steps":
            phases.end(
                "fail" if diverged else "pass",
                f"{_steady_detail(self.update_seconds)}; stop: {stop_cause}",
                examples=len(self.update_seconds) * trainer.plan.examples_per_update,
            )
        phases.end("fail" if diverged else "pass", f"stop: {stop_cause}")  # a first step that ended the run
        if stop_cause == "preempted":
            self.status, self.hand_over = _on_preemption(
                cfg, trainer, record, self.ckpt_dir, int(cfg.checkpoint.keep_last)
            )
            if self.hand_over or record is None:
                return
        if stop_cause == "interrupted":
            self._save_final_checkpoint()
            self._interrupted(self.interrupts.received or "SIGINT", "checkpoint saved")
            return
        if diverged:
            self.status = "diverged"
        elif record is not None and not checkpoint_path(self.ckpt_dir, trainer.updates_done).exists():
            self._save_final_checkpoint()
        if self.status == "preempted":  # max_requeues used up: the final validation, no closing
            self._final_validation()
            return
        evaluation = self._final_validation()
        if record is None:
            return
        log.info(
            "stop: %s; validation after %d updates: loss %.4f, accuracy %.3f",
            stop_cause,
            trainer.updates_done,
            evaluation["loss"],
            evaluation["accuracy"],
        )
        write_predictions(trainer, self.eval_items, self.run_path / "predictions.jsonl")
        fault_point("closing", trainer.updates_done)
        if self.status == "ok" and int(cfg.closing.control_examples) > 0:
            phases.begin("export", examples=int(cfg.closing.control_examples))
            closing = close_run(trainer.raw_model, trainer.task, cfg, self.run_path)
            phases.end(closing["verdict"], closing["reason"][:300])
            record.update(closing=closing)
            write_reproduce(self.run_path, record.data)
            (log.info if closing["verdict"] == "pass" else log.error)("closing: %s", closing["reason"])
        if self.interrupts.received and self.status == "ok":  # signalled during validation or closing
            self._interrupted(
                self.interrupts.received,
                "during the final validation or closing; the "
                "final checkpoint is saved, starting again redoes the closing",
            )

    def _save_final_checkpoint(self) -> None:
        if self.record is None or checkpoint_path(self.ckpt_dir, self.trainer.updates_done).exists():
            return
        self.phases.begin("checkpoint_save")
        cause = self.save_checkpoint()
        if cause is not None:  # the last update left NaN/inf in the weights or optimizer state
            self.status, self.stop_cause = "diverged", cause
            self.phases.end("fail", cause[:300])
            return
        path = checkpoint_path(self.ckpt_dir, self.trainer.updates_done)
        self.phases.end(detail=f"{path.name}, {path.stat().st_size:,} bytes")

    def _final_validation(self) -> dict:
        """The validation after the last update, logged once: a run started again after it was
        logged (a kill during closing) reuses the row instead of writing a second one."""
        done = self.trainer.updates_done
        if self.record is not None:
            logged = [r for r in self.record.rows("val") if r.get("update") == done]
            if logged:
                self.trainer.evaluate("val", self.eval_items)  # keep the replicas in step (DDP)
                return logged[-1]
        self.phases.begin("eval", examples=len(self.eval_items), micro_batch=int(self.cfg.batch.eval_micro_batch))
        evaluation = self.validate_now()
        self.phases.end(detail=f"loss {evaluation['loss']:.4g} on {len(self.eval_items)} validation examples")
        return evaluation

    def _interrupted(self, signal_name: str, how: str) -> None:
        updates = self.trainer.updates_done if self.trainer else 0
        self.status = "interrupted"
        self.stop_cause = f"interrupted: {signal_name} at update {updates} ({how})"
        if self.record is not None:  # kept across resumes: every signal that stopped this run
            self.extra["interrupted_by"] = self.record.data.get("interrupted_by", []) + [
                {
                    "signal": signal_name,
                    "at_update": updates,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "exit_code": 128 + int(getattr(signal, signal_name, signal.SIGINT)),
                }
            ]
        self.phases.end("fail", self.stop_cause[:300])
        log.warning("%s; resume with the same command and hydra.run.dir=%s", self.stop_cause, self.run_path)

    def close(self) -> None:
        """Record what happened (rank 0), release the signal handlers and the lock."""
        if not self.hand_over:
            self.preemption.uninstall()
        self.interrupts.uninstall()
        try:
            if self.record is not None and self.status is not None:
                self.phases.end("fail" if self.status != "ok" else "pass", f"run ended: {self.status}")
                try:
                    self.phases.write(self.run_path)
                except DiskFull as exc:
                    self.status, self.stop_cause, self.error = "failed", "disk_full", str(exc)
                    self.extra["disk_full"] = str(exc)
                if not self.hand_over:
                    seconds = self.update_seconds
                    self.record.finish(
                        self.status,
                        self.stop_cause,
                        error=self.error,
                        peak_memory=self.phases.peaks() or peak_memory(),
                        seconds_per_update=(sum(seconds) / len(seconds)) if seconds else None,
                        **self.extra,
                        **(self.trainer.position() if self.trainer else {}),
                    )
        finally:
            if self.lock is not None:
                self.lock.release()
        if self.hand_over:
            self.preemption.hand_over()  # submitit requeues the job and exits this process
        if "disk_full" in self.extra:
            raise DiskFull(self.extra["disk_full"])


def _worker(cfg: DictConfig, run_dir: str, overrides: list, sweep_dir: str | None = None) -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s] %(message)s")
    TrainingRun(cfg, run_dir, overrides, sweep_dir).run()


def _steady_detail(seconds: list) -> str:
    if not seconds:
        return "no update after the first"
    return (
        f"{len(seconds)} updates, {sum(seconds) / len(seconds):.3g} s/update (updates alone; the phase's "
        "wall time also holds validations and checkpoints)"
    )


def _on_preemption(
    cfg: DictConfig, trainer: Trainer, record: RunRecord | None, ckpt_dir: Path, keep: int
) -> tuple[str, bool]:
    """Save a complete checkpoint, record the interruption; requeue unless requeues are used up."""
    if record is None:  # non-zero ranks: rank 0 saves and decides
        return "preempted", True
    save_checkpoint(trainer, cfg, ckpt_dir, keep)
    interruptions = record.data.setdefault("interruptions", [])
    interruptions.append(
        {"at_update": trainer.updates_done, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "signal": "USR2"}
    )
    requeue = len(interruptions) <= int(cfg.checkpoint.max_requeues)
    record.update(interruptions=interruptions, status="requeued" if requeue else "preempted")
    log.warning(
        "preempted at update %d: checkpoint saved; %s",
        trainer.updates_done,
        "requeueing" if requeue else f"max_requeues={cfg.checkpoint.max_requeues} used up, ending",
    )
    if requeue:
        record.metrics.close()
    return "preempted", requeue


def _record_setup(cfg: DictConfig, trainer: Trainer, record: RunRecord, run_dir: Path, threads: int) -> None:
    """Log the batch arithmetic once and keep it, with the resolved config, in the run directory."""
    plan = trainer.plan
    summary = {
        **plan.summary(),
        "targets_seen": trainer.planned_targets(),
        "target_unit": trainer.task.info.get("target_unit", "target"),
    }
    lines = plan.describe() + [
        f"{summary['target_unit']}s in the loss over the budget = "
        f"{summary['targets_seen']} (counted from the data stream)"
    ]
    for line in lines:
        log.info("batch arithmetic: %s", line)
    log.info(
        "device %s, %d replica(s), %d CPU thread(s) per process, precision %s",
        trainer.device,
        trainer.ctx.world_size,
        threads,
        enum_value(cfg.precision.dtype),
    )
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    write_json_atomic(run_dir / "batch_plan.json", summary)
    record.update(batch_plan=summary, task=task_summary(cfg, trainer.task, trainer.train_items))
    if cfg.estimate.in_runs:  # off by default: the first estimate in a process costs seconds of set-up
        record.update(memory_estimate=estimate_summary(cfg, trainer.task))


def task_summary(cfg: DictConfig, task, train_items: list) -> dict:
    """What defines the task a run learns: the data settings and the share of target tokens
    truncation removed (the recap marks a variant whose task differs from the control's)."""
    cut = sum(int(item.get("truncated_target_tokens", 0)) for item in train_items)
    total = sum(int(item["answer_tokens"]) for item in train_items if "answer_tokens" in item)
    truncated = [int(item["truncated_tokens"]) for item in train_items if "truncated_tokens" in item]
    tokens = sum(truncated) + sum(len(item["input_ids"]) for item in train_items if "truncated_tokens" in item)
    return {
        "data": OmegaConf.to_container(cfg.data, resolve=True),
        "targets_truncated_share": cut / total if total else None,
        "examples_truncated_share": sum(n > 0 for n in truncated) / len(truncated) if truncated else None,
        "tokens_truncated_share": sum(truncated) / tokens if tokens else None,
    }


def estimate_summary(cfg: DictConfig, task) -> dict:
    """This variant's peak tensor memory per phase on fake tensors (nothing allocated): comparable
    between variants even on a CPU, where the process's RSS is mostly PyTorch itself."""
    from pilot.estimate.memory import EstimateRefused, estimate_memory

    try:
        estimate = estimate_memory(cfg, task)
    except EstimateRefused as error:
        return {"refused": str(error)}
    return {
        "peak_bytes": estimate.peak_bytes,
        "fake": True,
        "phases": {p.phase: p.peak_bytes for p in estimate.phases},
        "flops_per_micro_batch": estimate.flops_per_micro_batch,
    }


def train(cfg: DictConfig, run_dir: Path, overrides: Iterable[str] = (), sweep_dir: Path | None = None) -> dict:
    """Validate, run (spawning replicas when needed) and return the final run.json.

    Under torchrun only rank 0 writes the run directory; the other ranks return {}.
    """
    validate(cfg)
    run_dir = Path(run_dir)
    overrides = list(overrides)
    replicas = int(cfg.distributed.replicas)
    sweep = str(sweep_dir) if sweep_dir else None
    if replicas > 1 and not launched_externally():
        # the replicas catch Ctrl-C/SIGTERM themselves (same process group) and stop together at an
        # update boundary; this parent only waits for them instead of dying in the join
        watch = InterruptWatch().install()
        try:
            spawn(_worker, (cfg, str(run_dir), overrides, sweep), replicas, int(cfg.distributed.master_port))
        finally:
            watch.uninstall()
    else:
        _worker(cfg, str(run_dir), overrides, sweep)
        if int(os.environ.get("RANK", "0")) > 0:
            return {}
    return json.loads((run_dir / "run.json").read_text())
