"""``train(cfg, run_dir)``: one training run of a composed variant, start to finish.

1. validate the whole config (one error listing every problem);
2. start the replicas (spawned, or joined from torchrun/SLURM variables);
3. build the task and the model from their ``_target_``;
4. log the batch arithmetic once; train to the budget; evaluate;
5. write run.json and metrics.jsonl (rank 0).

Continuing a run lives in ``pilot.resume``, its checkpoints in ``pilot.checkpoint.Checkpointer``,
why it stops before its budget in ``pilot.stopping``, what it records once built in ``pilot.run_summary``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import torch
from omegaconf import DictConfig

from pilot.checkpoint import Checkpointer, checkpoint_bytes, restore_training_state
from pilot.checkpoint_checks import training_state_non_finite
from pilot.checks.contract import check_contract, model_settings
from pilot.child_process import ChildProcess, shared_child
from pilot.closing import close_run, control_count, write_run_reproduce
from pilot.config.values import enum_value, resolve_device
from pilot.engine.build import build_trainer, configure_threads, read_fingerprints, whole_model
from pilot.engine.distributed import DistContext, all_reduce_sum, init_from_env, launched_externally, rank0_decides
from pilot.engine.preemption import InterruptWatch, PreemptionWatch
from pilot.engine.rounded_updates import ROUNDED_AWAY_WARN, RoundedUpdates
from pilot.engine.trainer import Trainer, record_dict
from pilot.errors import no_space_left
from pilot.faults import fault_point, fault_requested
from pilot.finished_runs import refuse_finished_run
from pilot.host_memory_cap import cap_host_memory, release_host_memory_cap
from pilot.models.adapter import describe_parameters
from pilot.phases.train_phases import TrainPhases
from pilot.predictions import write_predictions
from pilot.resume import find_resume_state, open_record
from pilot.run_directory import after_refusal, remove_unstarted_job
from pilot.run_ending import RunEnding
from pilot.run_record import RunDirectoryLock, RunRecord, refusal_puts_back
from pilot.run_summary import record_setup
from pilot.spawned_ending import record_bytes, replicas_ended, run_replicas, unrecorded
from pilot.startup_signals import interrupt_behind, signal_name_of
from pilot.stopping import StopRules, is_diverged, signal_entry
from pilot.validation import validate

log = logging.getLogger("pilot")


class TrainingRun(RunEnding):
    """One training run on one replica: ``setup``, ``on_update`` after every update, ``finish``,
    or ``fail``; ``close`` in every case.

    Rank 0 owns the run directory (lock, run.json, metrics, checkpoints, phases.csv, closing).
    Whatever ends the run — budget, divergence, early stop, a signal, preemption, disk full, an
    exception — ``run`` records what actually happened, and ``close`` writes it.
    """

    def __init__(
        self, cfg: DictConfig, run_dir: str, overrides: list, sweep_dir: str | None = None, searchpath: tuple = ()
    ):
        self.cfg, self.run_path, self.overrides = cfg, Path(run_dir), overrides
        self.signal_name = "SIGINT"  # the signal that stopped the run, once one did
        self.resumed_at = 0  # the update of the checkpoint a resume continues from
        self.restored = False  # the trainer holds the state the run continues from (none for a new run)
        self.resumed_position: dict = {}  # the position of the checkpoint a resume continues from
        self.reopened = False  # this attempt opened (or reopened) the run's record
        self.unfinished = False  # the directory holds no finished run (checked under the lock)
        self.searchpath = list(searchpath)  # hydra.searchpath: REPRODUCE.md of a plug-in run repeats it
        self.sweep_dir = Path(sweep_dir) if sweep_dir else None
        self.checkpointer = Checkpointer.for_run(self.run_path, cfg)
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
        self.closing_child: ChildProcess | None = None  # the new process the closing's reload runs in
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
            self.finish(self.trainer.train(on_update=self.on_update))
        except KeyboardInterrupt as stop:  # a second signal (or no watch installed yet): stop at once
            self._stopped_at_once(stop)
        except Exception as exc:  # recorded, then re-raised: the failure must stay visible
            if (stop := interrupt_behind(exc)) is not None:  # a signal inside a library call that then raised
                self._stopped_at_once(stop)
                return
            self.fail(exc)
            raise no_space_left(exc) or exc  # noqa: B904 - no space anywhere: one message naming the file
        finally:
            self.close()

    def _stopped_at_once(self, stop: KeyboardInterrupt) -> None:
        at = self.standing_update()
        if self.trainer is None or not self.restored:
            how = (
                f"while it resumed from update {at}, before any further update; that checkpoint is kept"
                if at
                else "while it started, before any update"
            )
        elif self.checkpointer.has(at):
            how = "at once; its checkpoint is saved"
        else:
            newest = self.newest_checkpoint()
            how = f"at once, with no checkpoint of update {at}: " + (
                f"a resume continues from update {newest}, the newest one saved"
                if newest is not None
                else "none was saved yet, so a resume starts from update 0"
            )
        self._interrupted(self.interrupts.received or signal_name_of(stop), how, self.interrupts.events)

    def setup(self) -> None:
        """Lock the directory, find the resume (rank 0 records it), build and restore the trainer."""
        cfg = self.cfg
        if self.lock is not None:
            fault_point("lock")  # tests: a signal before this attempt holds the directory
            self.lock.acquire(announce=False)  # a run found finished leaves with its lock file as it was
            refuse_finished_run(cfg, self.run_path)
            self.unfinished = True  # the record there (if any) is this run's to continue: a signal now is said in it
            self.lock.announce()
        self.threads = configure_threads(cfg)  # before the resume: the count is compared with the checkpoint's
        device_type = resolve_device(cfg).type
        self.memory_cap = cap_host_memory(device_type, self.ctx.world_size)  # before the closing's process: inherited
        with refusal_puts_back(self.lock):  # a refused line leaves the directory as it was, its lock file too
            read = read_fingerprints(cfg)  # the model folder and data files: compared, then kept as this run's
            state, resume_note = find_resume_state(cfg, self.checkpointer, self.run_path, self.ctx.is_main, read)
        if state is not None:  # where the run stands until the trainer is restored (a signal may come first)
            self.resumed_at = int(state.get("position", {}).get("updates_done", 0))
            self.resumed_position = dict(state.get("position") or {})
        fault_point("setup")  # tests: a signal after the lock, before the record is (re)opened
        fault_point("setup_exception")  # tests: an error there (the job leaves no record)
        self.threads = self.threads.resumed(torch.get_num_threads())  # run.threads=0 keeps the checkpoint's
        if self.ctx.is_main and int(cfg.closing.control_examples) > 0:  # its imports overlap the training
            # nice 19: it waits for the end of the training, so its imports take what the training leaves
            # idle; shared: the next job of a sweep in this process finds it ready
            self.closing_child = shared_child(warm=("pilot.closing.cli",), nice=19)
        # run.json exists (status "running") before anything can fail, so a failure is recorded
        if self.ctx.is_main:
            with refusal_puts_back(self.lock):
                self.record = open_record(cfg, self.run_path, self.overrides, resume_note, self.sweep_dir)
                self.reopened = True
            self.phases.keep(self.run_path, attempt=1 + len(self.record.data.get("resumes") or []))
            if state is not None:
                self.rules.replay(self.record.rows())
        self.preemption.install()
        self.interrupts.install()
        if self.ctx.world_size != cfg.distributed.replicas:
            raise ValueError(
                f"distributed.replicas={cfg.distributed.replicas} but the launcher "
                f"started {self.ctx.world_size} process(es). Fix: make them agree."
            )
        self._build(state, read)
        if self.record is not None:
            record_setup(cfg, self.trainer, self.record, self.run_path, self.threads)
            if self.memory_cap is not None:
                self.record.update(host_memory_cap=self.memory_cap)
        self.phases.begin("first_step", examples=self.trainer.plan.examples_per_update)

    def _build(self, state: dict | None, read: dict) -> None:
        """The trainer (model, optimizer, data), restored from the checkpoint's ``state`` if any."""
        self.phases.begin("build_model")
        self.trainer = build_trainer(self.cfg, self.ctx, files_read=read)
        with torch.random.fork_rng(devices=[]):  # the contract (pilot.checks.contract), before any update
            check_contract(self.trainer.task, self.trainer.raw_model, model_settings(self.cfg))
        self.eval_items = self.trainer.task.encoded("val")[: int(self.cfg.loop.eval_examples)]
        if state is not None:
            restore_training_state(self.trainer, state)
        self.restored = True
        self.rounding = RoundedUpdates(self.trainer.raw_model, self.trainer.optimizer)  # its next update
        self.phases.end(
            detail=describe_parameters(self.trainer.raw_model)
            + (f"; resumed at update {self.trainer.updates_done}" if state is not None else "")
        )

    def on_update(self, row) -> str | None:
        """After every update: metrics, stop rules, validation, checkpoint, signals — in that order,
        so a checkpoint at a validation update is written after its validation row."""
        trainer, record = self.trainer, self.record
        if self.phases.open_phase == "first_step":
            rounded = self.rounding.said(row.lr)  # "" unless half-precision weights were measured
            if rounded and record is not None:  # half-precision weights: what their first update kept
                record.update(rounded_updates={"update": row.update, "share": self.rounding.share, "said": rounded})
            if rounded and self.rounding.share >= ROUNDED_AWAY_WARN:
                log.warning("update %d: %s", row.update, rounded)
            self.phases.end(
                detail=f"update {row.update}: loss {row.loss:.4g}, {row.seconds:.3g} s"
                + (f"; {rounded}" if rounded else ""),
                examples=row.examples,
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
        if not is_diverged(cause) and self.checkpointer.due(trainer.updates_done):
            cause = self.save_checkpoint() or cause
        fault_point("update", trainer.updates_done)
        fault_point("exception", trainer.updates_done)
        return cause or self._agreed_signal(last=trainer.updates_done >= trainer.plan.total_updates)

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
        self.checkpointer.save(self.trainer, writes=self.record is not None, checked=True)  # FSDP: every rank writes
        return None

    def _agreed_signal(self, last: bool = False) -> str | None:
        """'preempted' or 'interrupted' when any replica was signalled (all replicas stop together); ``last``: the closing's."""
        flags = torch.tensor([float(self.preemption.requested), float(self.interrupts.received is not None)])
        if self.ctx.is_distributed:
            flags = all_reduce_sum(flags.to(self.trainer.device), self.ctx).cpu()
        if flags[0] > 0:
            return "preempted"
        if last and flags[1] > 0:  # recorded as signal_after_budget, as a signal a moment later is
            log.warning("the signal came during the last update: the final validation and the closing run first")
        return "interrupted" if flags[1] > 0 and not last else None

    def validate_now(self) -> dict:
        evaluation = self.trainer.evaluate("val", self.eval_items)
        if self.record is not None:
            self.record.log_metrics({"kind": "val", "update": self.trainer.updates_done, **evaluation})
        return evaluation

    def finish(self, stop_cause: str) -> None:
        """After the last update: close the phases, then checkpoint, final validation and closing."""
        self.stop_cause, self.interrupts.training_over = stop_cause, True  # a signal from now: said so
        diverged = is_diverged(stop_cause)
        self.phases.end_training(stop_cause, diverged, self.update_seconds, self.trainer.plan.examples_per_update)
        if stop_cause == "preempted":
            self._preempted()
            if self.hand_over or self.record is None:
                return
        if stop_cause == "interrupted":
            self._save_final_checkpoint()
            self._interrupted(self.interrupts.received or "SIGINT", "checkpoint saved")
            return
        if diverged:
            self.status = "diverged"
        else:
            self._save_final_checkpoint()
        if self.status == "preempted":  # max_requeues used up: the final validation, no closing
            self._final_validation()
            return
        evaluation = self._final_validation()
        model = whole_model(self.trainer)  # FSDP: gathered by every rank, onto rank 0
        if self.record is not None:
            self._wrap_up(stop_cause, evaluation, model)

    def _wrap_up(self, stop_cause: str, evaluation: dict, model: torch.nn.Module) -> None:
        """Rank 0 after the final validation: predictions, the closing of a run that ended ok."""
        cfg, trainer, record, phases = self.cfg, self.trainer, self.record, self.phases
        accuracy = evaluation["accuracy"]
        log.info(
            "stop: %s; validation after %d updates: loss %.4f, accuracy %s",
            stop_cause,
            trainer.updates_done,
            evaluation["loss"],
            "n/a (value labels)" if accuracy is None else f"{accuracy:.3f}",
        )
        write_predictions(trainer, self.eval_items, self.run_path / "predictions.jsonl", model)
        fault_point("closing", trainer.updates_done)
        if self.status == "ok" and int(cfg.closing.control_examples) > 0:
            phases.begin("export", examples=control_count(trainer.task, cfg))  # what it holds, not what was asked
            closing = close_run(model, trainer.task, cfg, self.run_path, self.closing_child)
            phases.end(closing["verdict"], closing["reason"][:300])
            record.update(closing=closing)
            write_run_reproduce(self.run_path, record.data, cfg, self.searchpath)
            (log.info if closing["verdict"] == "pass" else log.error)("closing: %s", closing["reason"])
        elif self.status == "ok":  # said, not left to be guessed from a missing export/
            reason = "closing.control_examples=0: no export written, nothing reloaded"
            record.update(closing={"verdict": "skipped", "reason": reason})
            log.info("closing: %s", reason)
        if self.interrupts.received and self.status == "ok":  # the final validation and closing ran to the end
            name = self.interrupts.noted = self.interrupts.received  # the run is complete (ok); stop once recorded
            record.update(signal_after_budget=signal_entry(name, trainer.updates_done))
            log.warning("%s after the last update: the run is complete; stopping once it is recorded", name)

    def _save_final_checkpoint(self) -> None:
        if rank0_decides(self.record is None or self.checkpointer.has(self.trainer.updates_done), self.ctx):
            if self.record is not None:  # the last update's was a periodic one (or an earlier attempt's): said
                self.phases.saved_before(self.checkpointer, self.trainer.updates_done)
            return
        self.phases.begin("checkpoint_save")
        cause = self.save_checkpoint()
        if cause is not None:  # the last update left NaN/inf in the weights or optimizer state
            self.status, self.stop_cause = "diverged", cause
            self.phases.end("fail", cause[:300])
            return
        path = self.checkpointer.path(self.trainer.updates_done)
        self.phases.end(detail=f"{path.name}, {checkpoint_bytes(path):,} bytes" if self.record else "rank 0 writes it")

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


def _worker(cfg: DictConfig, run_dir: str, overrides: list, sweep_dir: str | None = None, searchpath=()) -> dict:
    """Run one replica; what ended it when no record was opened (a signal before it): else {}."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s] %(message)s")
    run = TrainingRun(cfg, run_dir, overrides, sweep_dir, searchpath)
    try:
        run.run()
    finally:
        release_host_memory_cap()  # set in setup
    if run.record is None and run.status == "interrupted":
        return unrecorded(run.signal_name)
    return {}


def train(
    cfg: DictConfig,
    run_dir: Path,
    overrides: Iterable[str] = (),
    sweep_dir: Path | None = None,
    searchpath: Iterable[str] = (),
) -> dict:
    """Validate, run (spawning replicas when needed) and return the final run.json (``searchpath``: a plug-in's
    hydra.searchpath, for REPRODUCE.md). Under torchrun only rank 0 writes the run directory; the others return {}."""
    validate(cfg)
    run_dir = Path(run_dir)
    overrides = list(overrides)
    replicas = int(cfg.distributed.replicas)
    worker_args = (cfg, str(run_dir), overrides, str(sweep_dir) if sweep_dir else None, tuple(searchpath))
    if replicas > 1 and not launched_externally():
        # a signal to this process is passed on to the replicas (``spawn``), which stop together at an
        # update boundary and record it; this parent waits for them
        before = record_bytes(run_dir)
        stopped = run_replicas(_worker, worker_args, replicas, int(cfg.distributed.master_port), run_dir)
        if (unstarted := replicas_ended(run_dir, stopped, before, overrides, sweep_dir)).get("recorded", True):
            return unstarted  # the run's record
    else:
        unstarted = _worker(*worker_args)
        if int(os.environ.get("RANK", "0")) > 0:
            return {}
    if unstarted:  # a signal before the run's record was opened: nothing claims a run
        log.warning("pilot: stopped before the run began (nothing was trained or recorded)")
        if sweep_dir is not None:
            remove_unstarted_job(run_dir)
        else:  # a directory made for this line goes; an earlier run's .hydra/ files are put back
            after_refusal(run_dir)
        return unstarted
    return json.loads((run_dir / "run.json").read_text())
